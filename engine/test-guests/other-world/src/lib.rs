//! A test component for the engine: valid, but of a world other than `weir:operator`, so the
//! engine must refuse it as an operator.

// SAFETY: wit-bindgen generates the canonical-ABI glue (raw pointers, `extern "C"`
// exports); no hand-written unsafe code exists here.
#[allow(unsafe_code, missing_docs, unused_qualifications, clippy::all)]
mod component {
    wit_bindgen::generate!({
        inline: "
            package test:other@1.0.0;

            world other {
                export run: func() -> u32;
            }
        ",
    });

    struct Other;

    impl Guest for Other {
        fn run() -> u32 {
            42
        }
    }

    export!(Other);
}
