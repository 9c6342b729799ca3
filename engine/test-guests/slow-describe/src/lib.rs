//! A test component for the engine: a `weir:operator` whose `describe` sleeps for an hour
//! (waiting in `wasi:io/poll`, using no CPU), so that tests can check that the host bounds
//! every guest call in wall time, also the ones made while a job is admitted or restored.
//! Written against the WIT directly: the guest SDK's `describe` is generated and cannot wait.

// SAFETY: wit-bindgen generates the canonical-ABI glue (raw pointers, `extern "C"`
// exports); no hand-written unsafe code exists here.
#[allow(unsafe_code, missing_docs, unused_qualifications, clippy::all)]
mod component {
    wit_bindgen::generate!({ path: "../../../wit", world: "operator-world" });

    use exports::weir::operator::operator::{Batch, Context, Error, Guest, OperatorInfo, StateDelta};

    struct SlowDescribe;

    impl Guest for SlowDescribe {
        fn describe() -> OperatorInfo {
            std::thread::sleep(std::time::Duration::from_secs(3600));
            OperatorInfo { name: "slow-describe".into(), state_version: 0, migrates_from: Vec::new() }
        }

        fn open(_context: Context) -> Result<(), Error> {
            Ok(())
        }

        fn process(_input: u32, batch: Batch) -> Result<Batch, Error> {
            Ok(batch)
        }

        fn on_watermark(_timestamp: i64) -> Result<Batch, Error> {
            Ok(Batch { data: Vec::new(), entries: Vec::new() })
        }

        fn on_timer(_key: Vec<u8>, _timestamp: i64) -> Result<Batch, Error> {
            Ok(Batch { data: Vec::new(), entries: Vec::new() })
        }

        fn snapshot(_checkpoint_id: u64, _full: bool) -> Result<StateDelta, Error> {
            Ok(StateDelta { names: Vec::new(), data: Vec::new(), entries: Vec::new() })
        }

        fn restore(_state_version: u32, _chunk: StateDelta) -> Result<(), Error> {
            Ok(())
        }
    }

    export!(SlowDescribe);
}
