//! The device mesh: named axes, device ids and coordinates.

use std::fmt;

use serde::Serialize;

use crate::error::ModelError;

/// A device of the mesh: its index, row-major over the mesh axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DeviceId(pub u16);

impl DeviceId {
    /// The index as a `usize`, for indexing per-device tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "d{}", self.0)
    }
}

/// One named axis of the mesh, e.g. the ring axis `x` or the TensorCore axis `tc`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Axis {
    /// The axis name used by `axis_index` and mesh device ids.
    pub name: String,
    /// The number of devices along the axis.
    pub size: usize,
}

/// A mesh of devices, the product of its axes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mesh {
    axes: Vec<Axis>,
}

/// The most devices a mesh may have (device ids are packed into 12 bits of a state word).
pub const MAX_DEVICES: usize = 4096;

impl Mesh {
    /// A mesh with the given axes; every axis must have a distinct name and a size of at least 1.
    pub fn new(axes: Vec<Axis>) -> Result<Mesh, ModelError> {
        if axes.is_empty() {
            return Err(ModelError::mesh("a mesh needs at least one axis"));
        }
        let mut total = 1usize;
        for (i, axis) in axes.iter().enumerate() {
            if axis.size == 0 {
                return Err(ModelError::mesh(format!("axis `{}` has size 0", axis.name)));
            }
            if axes[..i].iter().any(|a| a.name == axis.name) {
                return Err(ModelError::mesh(format!("axis `{}` appears twice", axis.name)));
            }
            total = total.saturating_mul(axis.size);
        }
        if total > MAX_DEVICES {
            return Err(ModelError::mesh(format!("{total} devices is more than the {MAX_DEVICES} semcheck supports")));
        }
        Ok(Mesh { axes })
    }

    /// The 1-D ring of the seed collectives: `n` devices on axis `x`.
    pub fn ring(n: usize) -> Result<Mesh, ModelError> {
        Mesh::new(vec![Axis { name: "x".into(), size: n }])
    }

    /// The two TensorCores of one chip, on axis `tc`.
    pub fn tensor_cores() -> Mesh {
        Mesh { axes: vec![Axis { name: "tc".into(), size: 2 }] }
    }

    /// The axes, outermost first.
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The number of devices.
    pub fn num_devices(&self) -> usize {
        self.axes.iter().map(|a| a.size).product()
    }

    /// All device ids in index order.
    pub fn devices(&self) -> impl Iterator<Item = DeviceId> {
        (0..self.num_devices()).map(|d| DeviceId(d as u16))
    }

    /// The position of the named axis, if the mesh has it.
    pub fn axis_position(&self, name: &str) -> Option<usize> {
        self.axes.iter().position(|a| a.name == name)
    }

    /// The coordinates of a device, one per axis.
    pub fn coords(&self, device: DeviceId) -> Vec<usize> {
        let mut rest = device.index();
        let mut coords = vec![0; self.axes.len()];
        for (i, axis) in self.axes.iter().enumerate().rev() {
            coords[i] = rest % axis.size;
            rest /= axis.size;
        }
        coords
    }

    /// The device at the given coordinates, or `None` when a coordinate is off the mesh.
    pub fn device_at(&self, coords: &[i64]) -> Option<DeviceId> {
        if coords.len() != self.axes.len() {
            return None;
        }
        let mut index = 0usize;
        for (c, axis) in coords.iter().zip(&self.axes) {
            if *c < 0 || *c as usize >= axis.size {
                return None;
            }
            index = index * axis.size + *c as usize;
        }
        Some(DeviceId(index as u16))
    }
}

impl fmt::Display for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.axes.iter().map(|a| format!("{}={}", a.name, a.size)).collect();
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_round_trip() {
        let mesh = Mesh::new(vec![Axis { name: "x".into(), size: 3 }, Axis { name: "tc".into(), size: 2 }]).unwrap();
        for d in mesh.devices() {
            let c: Vec<i64> = mesh.coords(d).iter().map(|&c| c as i64).collect();
            assert_eq!(mesh.device_at(&c), Some(d));
        }
        assert_eq!(mesh.device_at(&[3, 0]), None);
        assert_eq!(mesh.device_at(&[0, -1]), None);
    }

    #[test]
    fn bad_meshes_are_errors() {
        assert!(Mesh::ring(0).is_err());
        assert!(Mesh::ring(MAX_DEVICES + 1).is_err());
        assert!(Mesh::new(vec![]).is_err());
    }
}
