//! The compiled form of a kernel on a mesh: one straight-line program per device.
//!
//! Control flow in a Pallas kernel depends only on `axis_index` and `program_id`, so
//! compiling resolves every `when`, index and device id, and each device's whole run
//! (every invocation, every grid index) becomes a flat list of [`Op`]s. A device's local
//! state in an execution is then just its program counter. Every engine interprets this
//! form.

use std::sync::Arc;

use crate::error::ModelError;
use crate::event::{CellSlots, DmaKey};
use crate::ir::{BufferDecl, Kernel, Loc, SemDecl, SemKind, StmtId};
use crate::mesh::{DeviceId, Mesh};
use crate::reduction::Dependencies;
use crate::semantics::{DmaLanding, Semantics};
use crate::spec::Spec;
use crate::value::{ValueId, ValueTable};

/// A cell of the whole system (every device's buffers and the shared buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellId(pub u32);

/// A semaphore of the whole system: `device * sems_per_device + local index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SemSlot(pub u32);

/// A list of cells, stored in [`Program::cell_pool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellSpan {
    /// Offset into the pool.
    pub start: u32,
    /// Number of cells.
    pub len: u32,
}

/// A local computation on cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeKind {
    /// `dst = zeros_like(dst)`
    Zero,
    /// `dst = src`
    Copy,
    /// `dst += src`
    Add,
    /// `dst = f(src)` for the function id of the value table.
    Apply(u32),
    /// `dst = formula(src)`: [`Program::formulas`]`[k]` (compute on several views).
    Formula(u32),
}

/// One operation of a device's straight-line program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// The device enters the kernel: its buffers and non-barrier semaphores are reset.
    Enter,
    /// Pallas' implicit entry barrier: waits until every device has entered.
    EntryBarrier,
    /// The device leaves the kernel; semaphores, outstanding DMAs and outputs are checked.
    Exit,
    /// `semaphore_signal`
    Signal {
        /// The device whose semaphore is incremented.
        target: DeviceId,
        /// The semaphore (on `target`).
        sem: SemSlot,
        /// The increment.
        inc: u32,
    },
    /// `semaphore_wait`, and the waits of DMA descriptors.
    Wait {
        /// The semaphore (on this device).
        sem: SemSlot,
        /// The amount.
        amount: u32,
    },
    /// Start of a local copy.
    LocalDma {
        /// Source cells.
        src: CellSpan,
        /// Destination cells.
        dst: CellSpan,
        /// Semaphore incremented when done.
        sem: SemSlot,
        /// Byte count.
        bytes: u32,
    },
    /// Start of a remote copy.
    RemoteDma {
        /// Source cells (this device).
        src: CellSpan,
        /// Destination cells (on `target`).
        dst: CellSpan,
        /// The target device.
        target: DeviceId,
        /// Semaphore on this device, incremented at *sent*.
        send_sem: SemSlot,
        /// Semaphore on the target, incremented at *received*.
        recv_sem: SemSlot,
        /// Byte count.
        bytes: u32,
    },
    /// A local computation.
    Compute {
        /// What is computed.
        kind: ComputeKind,
        /// Cells written (and read, for `Add`).
        dst: CellSpan,
        /// Cells read (empty for `Zero`).
        src: CellSpan,
    },
}

/// Where an operation came from, for traces and messages.
#[derive(Clone, Debug)]
pub struct OpInfo {
    /// The operation in the kernel's own names, e.g.
    /// `start remote_copy hbm_buf[0] -> d2 hbm_buf[1] (remote_send_sem, remote_recv_sem)`.
    pub label: String,
    /// The invocation (0-based) the operation belongs to.
    pub invocation: u32,
    /// The grid index; empty for entry and exit.
    pub grid: Vec<usize>,
    /// The kernel statement it was compiled from (`None` for entry, exit and the implicit
    /// entry barrier).
    pub stmt: Option<StmtId>,
}

/// One device's program.
#[derive(Clone, Debug)]
pub struct DeviceProgram {
    /// The operations, in program order.
    pub ops: Vec<Op>,
    /// One [`OpInfo`] per operation.
    pub info: Vec<OpInfo>,
    /// The pc of each invocation's `Enter`.
    pub enter_pc: Vec<u32>,
    /// The pc of each invocation's `Exit`.
    pub exit_pc: Vec<u32>,
    /// The cells reset at each `Enter`, with their initial value.
    pub reset: Vec<(CellId, ValueId)>,
    /// The output cells checked at this device's `Exit`.
    pub expected: Vec<(CellId, ValueId)>,
    /// Statements that compile to no operation (SMEM scalar loads and stores, run when
    /// the program is compiled; copies of 0 bytes and their waits), each with the pc of
    /// the operation that follows it: the device has run it once its pc reaches that one.
    pub quiet: Vec<(u32, crate::ir::StmtId)>,
}

impl DeviceProgram {
    /// The number of operations; a device whose pc equals it has finished.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the program is empty (never: it has at least `Enter` and `Exit`).
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Where a cell lives.
#[derive(Clone, Debug)]
pub struct CellInfo {
    /// The owning device, or `None` for a shared buffer.
    pub owner: Option<DeviceId>,
    /// Index of the buffer declaration.
    pub buffer: usize,
    /// Index in the buffer's shape.
    pub index: Vec<usize>,
}

/// A static access to a cell by some operation, for partial-order reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The device running the operation.
    pub device: DeviceId,
    /// Its pc.
    pub pc: u32,
    /// Whether it writes the cell (else it only reads it).
    pub write: bool,
}

/// A kernel compiled for a mesh and a repeat count, with its specification.
#[derive(Clone, Debug)]
pub struct Program {
    /// The kernel's name.
    pub kernel: String,
    /// The kernel it was compiled from (statements, their ids and source locations).
    pub ir: Arc<Kernel>,
    /// The hardware assumptions the engines interpret it under.
    pub semantics: Semantics,
    /// The mesh.
    pub mesh: Mesh,
    /// Number of back-to-back invocations.
    pub repeat: u32,
    /// The buffer declarations.
    pub buffers: Vec<BufferDecl>,
    /// The semaphore declarations, expanded: one entry per semaphore of one device.
    pub sem_decls: Vec<(SemDecl, Option<usize>)>,
    /// Semaphores per device.
    pub sems_per_device: usize,
    /// One program per device.
    pub devices: Vec<DeviceProgram>,
    /// Every cell of the system.
    pub cells: Vec<CellInfo>,
    /// Storage of the cell lists of operations.
    pub cell_pool: Vec<CellId>,
    /// The value of every cell before the first invocation.
    pub initial_cells: Vec<ValueId>,
    /// The expected values of shared cells, checked when the last device exits.
    pub shared_expected: Vec<(CellId, ValueId)>,
    /// The value table with the atoms, expected values and functions of this program.
    pub values: ValueTable,
    /// The specification it was compiled with.
    pub spec: Spec,
    /// Every static access of every cell.
    pub accesses: Vec<Vec<Access>>,
    /// Static indexes for partial-order reduction.
    pub dependencies: Dependencies,
    /// The numbering of cell landings (under `--dma-landing cells`), for encoding events.
    pub cell_slots: CellSlots,
    /// The formulas of [`ComputeKind::Formula`] operations.
    pub formulas: Vec<crate::formula::Formula>,
    /// The kernels each run of the program goes through, in order: the kernel alone, or
    /// the launches of a program of several kernels ([`crate::ir::Launch`]). Invocation
    /// `k` of a device (its `k`-th `Enter` .. `Exit`) runs kernel `k % kernels.len()` of
    /// run `k / kernels.len()`.
    pub kernels: Vec<String>,
    /// Per semaphore of a device (an index into [`Program::sem_decls`]), the last kernel
    /// of a run (an index into [`Program::kernels`]) in which it is alive: the exit rules
    /// check it at that kernel's exit, and a signal or a DMA landing may reach it until
    /// then. 0 for every semaphore of a single kernel.
    pub sem_last: Vec<u32>,
}

impl Program {
    /// The same program under other hardware assumptions; an error only when
    /// `--dma-landing cells` would give a device more cells to land than an encoded event
    /// can name (see [`CellSlots`]).
    pub fn with_semantics(mut self, semantics: Semantics) -> Result<Program, ModelError> {
        self.cell_slots = match semantics.dma_landing {
            DmaLanding::Whole => CellSlots::default(),
            DmaLanding::Cells => CellSlots::build(&self)?,
        };
        self.semantics = semantics;
        Ok(self)
    }

    /// The source location of the statement the operation at `pc` of `device` comes from.
    pub fn op_loc(&self, device: DeviceId, pc: u32) -> Option<&Loc> {
        let id = self.devices[device.index()].info[pc as usize].stmt?;
        self.ir.statement(id)?.loc.as_ref()
    }

    /// The cells of a span.
    pub fn span(&self, span: CellSpan) -> &[CellId] {
        &self.cell_pool[span.start as usize..(span.start + span.len) as usize]
    }

    /// The number of devices.
    pub fn num_devices(&self) -> usize {
        self.devices.len()
    }

    /// The number of semaphores of the whole system.
    pub fn num_sems(&self) -> usize {
        self.sems_per_device * self.devices.len()
    }

    /// The device a semaphore slot belongs to.
    pub fn sem_device(&self, slot: SemSlot) -> DeviceId {
        DeviceId((slot.0 as usize / self.sems_per_device) as u16)
    }

    /// The kind of a semaphore slot.
    pub fn sem_kind(&self, slot: SemSlot) -> SemKind {
        self.sem_decls[slot.0 as usize % self.sems_per_device].0.kind
    }

    /// The declaration (in the kernel's IR) a semaphore slot is an element of.
    pub fn sem_decl_of(&self, slot: SemSlot) -> crate::ir::SemId {
        let mut local = slot.0 as usize % self.sems_per_device;
        for (i, decl) in self.ir.semaphores.iter().enumerate() {
            let len = decl.len.unwrap_or(1);
            if local < len {
                return crate::ir::SemId(i as u32);
            }
            local -= len;
        }
        crate::ir::SemId(self.ir.semaphores.len() as u32)
    }

    /// A semaphore's name, e.g. `recv_sems[1]`.
    pub fn sem_name(&self, slot: SemSlot) -> String {
        let (decl, index) = &self.sem_decls[slot.0 as usize % self.sems_per_device];
        match index {
            Some(i) => format!("{}[{i}]", decl.name),
            None => decl.name.clone(),
        }
    }

    /// A semaphore's name with its device, e.g. `d1 capacity_sem`.
    pub fn sem_full_name(&self, slot: SemSlot) -> String {
        format!("{} {}", self.sem_device(slot), self.sem_name(slot))
    }

    /// A cell's name without its device, e.g. `hbm_buf[1,0]`.
    pub fn cell_name(&self, cell: CellId) -> String {
        let info = &self.cells[cell.0 as usize];
        let name = &self.buffers[info.buffer].name;
        if info.index.is_empty() {
            name.clone()
        } else {
            let idx: Vec<String> = info.index.iter().map(|i| i.to_string()).collect();
            format!("{name}[{}]", idx.join(","))
        }
    }

    /// A cell's name with its device (`d1 hbm_buf[1]`), or `shared hbm` for shared cells.
    pub fn cell_full_name(&self, cell: CellId) -> String {
        match self.cells[cell.0 as usize].owner {
            Some(d) => format!("{d} {}", self.cell_name(cell)),
            None => format!("shared {}", self.cell_name(cell)),
        }
    }

    /// The invocation and whether the device is inside the kernel, at a pc.
    /// `None` once the device has finished every invocation.
    pub fn lifecycle(&self, device: DeviceId, pc: u32) -> Option<(u32, bool)> {
        let dp = &self.devices[device.index()];
        if pc as usize >= dp.ops.len() {
            return None;
        }
        let k = dp.enter_pc.partition_point(|&e| e <= pc).saturating_sub(1);
        Some((k as u32, pc > dp.enter_pc[k] && pc <= dp.exit_pc[k]))
    }

    /// The invocation an operation belongs to.
    pub fn invocation_of(&self, device: DeviceId, pc: u32) -> u32 {
        self.devices[device.index()].info[pc as usize].invocation
    }

    /// Whether this is a program of several kernels (see [`Program::kernels`]).
    pub fn has_several_kernels(&self) -> bool {
        self.ir.is_program()
    }

    /// The kernel (an index into [`Program::kernels`]) invocation `k` runs.
    pub fn kernel_of(&self, k: u32) -> u32 {
        k % self.kernels.len().max(1) as u32
    }

    /// The run (0-based, up to `repeat`) invocation `k` belongs to.
    pub fn run_of(&self, k: u32) -> u32 {
        k / self.kernels.len().max(1) as u32
    }

    /// How many kernel invocations each device makes: `repeat` runs of the program, each
    /// every kernel in order.
    pub fn invocations(&self) -> u32 {
        self.repeat * self.kernels.len().max(1) as u32
    }

    /// Whether invocation `k` is the first kernel of its run: its `Enter` starts the
    /// program afresh (buffers and semaphores reset).
    pub fn starts_run(&self, k: u32) -> bool {
        self.kernel_of(k) == 0
    }

    /// Whether invocation `k` is the last kernel of its run: its `Exit` checks the outputs
    /// and everything still alive.
    pub fn ends_run(&self, k: u32) -> bool {
        self.kernel_of(k) as usize + 1 >= self.kernels.len()
    }

    /// The semaphore the issuer of DMA `key` waits on for it: a local copy's, a remote
    /// copy's send semaphore (`None` for an operation that is not a DMA).
    pub fn issuer_sem(&self, key: DmaKey) -> Option<SemSlot> {
        match self.dma_op(key) {
            Op::LocalDma { sem, .. } => Some(sem),
            Op::RemoteDma { send_sem, .. } => Some(send_sem),
            _ => None,
        }
    }

    /// The last invocation in which semaphore `slot` is alive, for an operation of
    /// invocation `k` that reaches it (a signal, or a DMA that lands on it): `k` for a
    /// semaphore of the kernel alone, a later kernel's for one the kernel hands on.
    pub fn alive_until(&self, slot: SemSlot, k: u32) -> u32 {
        let last = self.sem_last[slot.0 as usize % self.sems_per_device];
        k + last.saturating_sub(self.kernel_of(k))
    }

    /// Whether semaphore `slot` is checked at the exit of invocation `k`: it is alive in no
    /// later kernel of the run.
    pub fn checked_at_exit(&self, slot: SemSlot, k: u32) -> bool {
        self.sem_last[slot.0 as usize % self.sems_per_device] <= self.kernel_of(k)
    }

    /// The operation's label prefixed with its device and grid index, e.g.
    /// `d1 (2) wait capacity_sem 1`.
    pub fn describe_op(&self, device: DeviceId, pc: u32) -> String {
        let info = &self.devices[device.index()].info[pc as usize];
        let inv = if self.repeat > 1 { format!("#{} ", self.run_of(info.invocation)) } else { String::new() };
        if info.grid.is_empty() {
            format!("{device} {inv}{}", info.label)
        } else {
            let g: Vec<String> = info.grid.iter().map(|i| i.to_string()).collect();
            format!("{device} {inv}({}) {}", g.join(","), info.label)
        }
    }
}
