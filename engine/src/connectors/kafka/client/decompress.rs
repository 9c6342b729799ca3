//! Decompression of fetched record batches, bounded by what it may produce (issue 40). A
//! tenant may write to its granted topic whatever a producer can: a gzip batch inflates
//! ~1000×, zstd and lz4 more, and a batch header may claim any record count. Every batch
//! is checked before anything is allocated for it, and decompressed into at most the bytes
//! it may take.

use std::io::Read;

use bytes::Bytes;
use kafka_protocol::records::Compression;

/// The most bytes one record batch may decompress to: far past what producers make (a
/// batch is at most the broker's `message.max.bytes`, 1 MiB by default, compressed), far
/// below a bomb.
pub const MAX_BATCH_BYTES: usize = 32 << 20;

/// The most records one batch may hold (each decoded record costs host memory beyond its
/// bytes).
pub const MAX_BATCH_RECORDS: usize = 1 << 18;

/// Host memory one decoded record is counted for besides its bytes.
pub const RECORD_OVERHEAD_BYTES: usize = 128;

/// The bytes a record of a v2 batch takes at least: its length, attributes, timestamp and
/// offset deltas, key and value lengths and header count, a byte each.
pub const MIN_RECORD_BYTES: usize = 7;

/// Bytes of a v2 batch header before its records.
pub const BATCH_HEADER_BYTES: usize = 61;

/// Why a batch is refused (it can never be decoded), or put off (not in this fetch).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchRefused {
    /// It claims more records than it may hold or than its bytes can.
    #[error("claims {claimed} records, more than {limit} ({why})")]
    Records {
        /// The record count of its header.
        claimed: i64,
        /// The most it may claim.
        limit: usize,
        /// What bounds it.
        why: &'static str,
    },
    /// It decompresses past [`MAX_BATCH_BYTES`] (a decompression bomb), or is malformed.
    #[error("does not decompress within {limit} bytes ({codec}): {detail}")]
    Decompress {
        /// The bound it passed.
        limit: usize,
        /// Its codec.
        codec: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// It decompresses past what is left of this fetch's budget: it is fetched again later.
    #[error("does not fit what is left of this fetch's budget ({left} bytes)")]
    OverBudget {
        /// Bytes left.
        left: usize,
    },
}

/// What a v2 batch header says: its record count and codec.
pub fn header(batch: &[u8]) -> Option<(i64, Compression)> {
    if batch.len() < BATCH_HEADER_BYTES || batch[16] != 2 {
        return None;
    }
    let attributes = i16::from_be_bytes([batch[21], batch[22]]);
    let count = i64::from(i32::from_be_bytes(batch[57..61].try_into().ok()?));
    let compression = match attributes & 0x7 {
        0 => Compression::None,
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        4 => Compression::Zstd,
        _ => return None,
    };
    Some((count, compression))
}

/// Checks a batch's record count before it is decoded: at most [`MAX_BATCH_RECORDS`], and
/// (uncompressed) no more than its bytes can hold.
pub fn check_count(batch: &[u8]) -> Result<(), BatchRefused> {
    let Some((count, compression)) = header(batch) else { return Ok(()) };
    if count < 0 || count > MAX_BATCH_RECORDS as i64 {
        return Err(BatchRefused::Records {
            claimed: count,
            limit: MAX_BATCH_RECORDS,
            why: "a batch's limit here",
        });
    }
    let fits = (batch.len() - BATCH_HEADER_BYTES) / MIN_RECORD_BYTES;
    if compression == Compression::None && count > fits as i64 {
        return Err(BatchRefused::Records { claimed: count, limit: fits, why: "what its bytes can hold" });
    }
    Ok(())
}

fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Snappy => "snappy",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    }
}

/// Decompresses `compressed` (a batch's records) into at most `limit` bytes, then checks
/// that they can hold `count` records. `limit` is [`MAX_BATCH_BYTES`] or less (what is left
/// of a fetch's budget): past the former the batch is refused, past a smaller one put off.
pub fn decompress(
    compressed: &[u8],
    codec: Compression,
    limit: usize,
    count: i64,
) -> Result<Bytes, BatchRefused> {
    let failed = |detail: String| BatchRefused::Decompress { limit, codec: codec_name(codec), detail };
    let out = match codec {
        Compression::None => compressed.to_vec(),
        Compression::Gzip => read_bounded(flate2::read::GzDecoder::new(compressed), limit).map_err(failed)?,
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::new(compressed).map_err(|e| failed(e.to_string()))?;
            read_bounded(decoder, limit).map_err(failed)?
        }
        Compression::Lz4 => {
            let decoder = lz4::Decoder::new(compressed).map_err(|e| failed(e.to_string()))?;
            read_bounded(decoder, limit).map_err(failed)?
        }
        Compression::Snappy => snappy(compressed, limit).map_err(failed)?,
    };
    if count > (out.len() / MIN_RECORD_BYTES) as i64 {
        return Err(BatchRefused::Records {
            claimed: count,
            limit: out.len() / MIN_RECORD_BYTES,
            why: "what its decompressed bytes can hold",
        });
    }
    Ok(Bytes::from(out))
}

/// Reads `reader` to its end, failing past `limit` bytes (read in steps: never more than
/// the limit and one step held).
fn read_bounded(reader: impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut out).map_err(|e| e.to_string())?;
    if out.len() > limit {
        return Err(format!("more than {limit} bytes"));
    }
    Ok(out)
}

/// Kafka's snappy: xerial framing (a 16-byte header, then blocks each with its length) or
/// raw snappy; every block's stated length is checked before it is allocated.
fn snappy(compressed: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    const MAGIC: &[u8] = b"\x82SNAPPY\x00";
    let block = |block: &[u8], out: &mut Vec<u8>| -> Result<(), String> {
        let len = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
        if out.len().saturating_add(len) > limit {
            return Err(format!("more than {limit} bytes"));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new().decompress(block, &mut out[start..]).map_err(|e| e.to_string())?;
        Ok(())
    };
    let mut out = Vec::new();
    if !compressed.starts_with(MAGIC) {
        block(compressed, &mut out)?;
        return Ok(out);
    }
    let mut rest = compressed.get(16..).ok_or("a snappy header cut short")?;
    while !rest.is_empty() {
        let len = rest.get(..4).ok_or("a snappy block length cut short")?;
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
        let data = rest.get(4..4 + len).ok_or("a snappy block cut short")?;
        block(data, &mut out)?;
        rest = &rest[4 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn every_codec_is_held_to_the_limit() {
        // 8 MiB of zeros: a few KiB compressed (snappy: ~400 KiB).
        let zeros = vec![0u8; 8 << 20];
        let zstd = zstd::stream::encode_all(&zeros[..], 3).unwrap();
        let mut lz4 = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
        lz4.write_all(&zeros).unwrap();
        let (lz4, result) = lz4.finish();
        result.unwrap();
        let raw_snappy = snap::raw::Encoder::new().compress_vec(&zeros).unwrap();
        for (codec, bytes) in [
            (Compression::Gzip, gzip(&zeros)),
            (Compression::Zstd, zstd),
            (Compression::Lz4, lz4),
            (Compression::Snappy, raw_snappy),
        ] {
            assert!(bytes.len() < zeros.len() / 20, "{codec:?} compresses: {}", bytes.len());
            let out = decompress(&bytes, codec, 8 << 20, 10).unwrap();
            assert_eq!(out.len(), zeros.len(), "{codec:?} within the limit");
            let e = decompress(&bytes, codec, 1 << 20, 10).unwrap_err();
            assert!(
                matches!(e, BatchRefused::Decompress { limit, .. } if limit == 1 << 20),
                "{codec:?}: {e}"
            );
        }
    }

    #[test]
    fn a_record_count_past_the_bytes_is_refused_before_decoding() {
        let mut batch = vec![0u8; BATCH_HEADER_BYTES + 70];
        batch[16] = 2;
        batch[57..61].copy_from_slice(&10i32.to_be_bytes());
        assert_eq!(check_count(&batch), Ok(()));
        batch[57..61].copy_from_slice(&11i32.to_be_bytes());
        assert!(matches!(check_count(&batch), Err(BatchRefused::Records { claimed: 11, limit: 10, .. })));
        batch[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        batch[22] = 1; // gzip: the bytes say nothing yet, the batch limit does
        assert!(matches!(check_count(&batch), Err(BatchRefused::Records { limit: MAX_BATCH_RECORDS, .. })));
        // Decompressed, the count is checked against what came out.
        let e = decompress(&gzip(&[1u8; 700]), Compression::Gzip, 1 << 20, 101).unwrap_err();
        assert!(matches!(e, BatchRefused::Records { claimed: 101, limit: 100, .. }), "{e}");
    }
}
