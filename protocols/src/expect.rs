//! Helpers to write specifications.

use semcheck_model::{Atom, DeviceId, Expectation, Expected};

/// The atom of device `origin`'s input, block `block`, part `part`.
pub(crate) fn atom(origin: usize, block: usize, part: usize) -> Atom {
    Atom::first_input(origin as u16, block as u16, part as u16)
}

/// `device`'s `buffer[index]` must hold `value` at exit.
pub(crate) fn expect(device: usize, buffer: &str, index: &[usize], value: Expected) -> Expectation {
    Expectation { device: DeviceId(device as u16), buffer: buffer.to_string(), index: index.to_vec(), value }
}
