//! Snapshots and restores as state documents (`snapshot-encoded`, `plan-restore`,
//! `restore-encoded` of wit/encoded.wit): the host transcodes state values between
//! MessagePack and the guest's document format, so the guest neither encodes nor decodes
//! them itself.
//!
//! Invariants: a delta built from a document is checked like a plain one and never exceeds
//! what the host copies out of a snapshot; a guest that answers none (or a chunk its
//! format cannot carry) gets the plain call, so the stored entries never depend on the path.

use super::super::bindings::encoded::{EncodedBatches, RestorePlan};
use super::super::bindings::{GuestOperatorError, StateDelta};
use super::super::encoded::{self as codec, DecodeError};
use super::super::error::{Call, GuestError};
use super::{OperatorInstance, check_delta, format_name, within};

/// The counter of snapshots taken through `snapshot-encoded`.
pub const ENCODED_SNAPSHOTS: &str = "encoded_snapshots";
/// The counter of restore chunks delivered through `restore-encoded`.
pub const ENCODED_RESTORE_CHUNKS: &str = "encoded_restore_chunks";
/// The counter of restore chunks the planned format could not carry exactly, which went
/// through the plain `restore` instead.
pub const ENCODED_FALLBACK_RESTORE_CHUNKS: &str = "encoded_fallback_restore_chunks";

impl OperatorInstance {
    /// `snapshot-encoded`, when the component has it: `None` when it has not or answers
    /// none (the plain `snapshot` then runs).
    pub(super) async fn snapshot_encoded(
        &mut self,
        checkpoint_id: u64,
        full: bool,
    ) -> Result<Option<StateDelta>, GuestError> {
        let Some(exports) = self.encoded_exports() else { return Ok(None) };
        self.begin(Call::Snapshot)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            exports.call_snapshot_encoded(&mut self.store, checkpoint_id, full),
        )
        .await;
        let Some(encoded) = self.finish(Call::Snapshot, r)? else { return Ok(None) };
        let max = self.who.hostcall_fuel(Call::Snapshot);
        let format = encoded.format;
        let delta = codec::decode_state(format, encoded.names, &encoded.doc, max).map_err(|e| {
            let reason = match e {
                DecodeError::Malformed(reason) => reason,
                DecodeError::TooLarge => format!("it describes a state delta of more than {max} bytes"),
                e @ DecodeError::HostMemory(_) => e.to_string(),
            };
            self.failed_snapshot(format!("its {} state document: {reason}", format_name(format)))
        })?;
        check_delta(&delta).map_err(|reason| self.failed_snapshot(reason.to_string()))?;
        self.count(ENCODED_SNAPSHOTS);
        Ok(Some(delta))
    }

    /// A snapshot document that cannot be stored: the guest has already handed its changes
    /// over, so a later snapshot of this instance would miss them. The instance is not
    /// entered again.
    pub(super) fn failed_snapshot(&mut self, reason: String) -> GuestError {
        let err = self.malformed(Call::Snapshot, reason);
        self.poisoned = Some(err.to_string());
        err
    }

    /// `restore-encoded` of `chunk`, when the component plans it for the chunk's version and
    /// names and the planned format carries the chunk exactly; `false` when the plain
    /// `restore` must take it.
    pub(super) async fn restore_encoded(
        &mut self,
        state_version: u32,
        chunk: &StateDelta,
    ) -> Result<bool, GuestError> {
        let Some(exports) = self.encoded_exports() else { return Ok(false) };
        let Some(plan) = self.restore_plan(&exports, state_version, &chunk.names).await? else {
            return Ok(false);
        };
        let Some(encoded) = self.encoded.as_mut() else { return Ok(false) };
        let mut doc = std::mem::take(&mut encoded.doc);
        if codec::encode_state(plan.format, chunk, &plan.forms, &mut doc).is_err() {
            encoded.doc = doc;
            self.count(ENCODED_FALLBACK_RESTORE_CHUNKS);
            return Ok(false);
        }
        self.begin(Call::Restore)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            exports.call_restore_encoded(&mut self.store, state_version, &chunk.names, &doc),
        )
        .await;
        if let Some(encoded) = &mut self.encoded {
            encoded.doc = doc;
        }
        self.finish(Call::Restore, r)?;
        self.count(ENCODED_RESTORE_CHUNKS);
        Ok(true)
    }

    /// The guest's `plan-restore` answer for `state_version` and `names`, asked once per
    /// version and set of names (the answer never changes for the same arguments).
    async fn restore_plan(
        &mut self,
        exports: &EncodedBatches,
        state_version: u32,
        names: &[String],
    ) -> Result<Option<RestorePlan>, GuestError> {
        if let Some((version, asked, plan)) = self.encoded.as_ref().and_then(|e| e.plan.as_ref())
            && *version == state_version
            && asked.as_slice() == names
        {
            return Ok(plan.clone());
        }
        self.begin(Call::Restore)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            exports.call_plan_restore(&mut self.store, state_version, names),
        )
        .await;
        let plan = self.finish(Call::Restore, r.map(Ok::<_, GuestOperatorError>))?;
        if let Some(p) = &plan
            && p.forms.len() != names.len()
        {
            let reason = format!(
                "its restore plan gives {} value forms for {} state names",
                p.forms.len(),
                names.len()
            );
            return Err(self.malformed(Call::Restore, reason));
        }
        if let Some(encoded) = &mut self.encoded {
            encoded.plan = Some((state_version, names.to_vec(), plan.clone()));
        }
        Ok(plan)
    }

    fn encoded_exports(&self) -> Option<EncodedBatches> {
        self.encoded.as_ref().map(|e| e.exports.clone())
    }
}
