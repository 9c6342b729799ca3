//! The example operators compiled into the binary, addressed as `builtin:<name>`.

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// The component bytes of builtin module `name` (without the `builtin:` prefix).
pub fn get(name: &str) -> Option<&'static [u8]> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// Names of the builtin modules.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(n, _)| *n)
}
