//! The kernel IR: the contract between front ends (the Rust DSL today, Pallas source
//! later) and the engines.
//!
//! A [`Kernel`] is plain data: declarations of buffers and semaphores, a grid, and a body
//! of statements that every device runs once per grid index. Nothing in it refers to Rust
//! closures; indices, conditions and device ids are [`Expr`]s evaluated per device when the
//! kernel is compiled for a mesh ([`crate::compile()`]).

use std::fmt;

use serde::Serialize;

use crate::expr::Expr;

/// Index of a buffer declaration in [`Kernel::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u32);

/// Index of a semaphore declaration in [`Kernel::semaphores`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SemId(pub u32);

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MemorySpace {
    /// HBM (`pl.ANY`).
    Hbm,
    /// VMEM.
    Vmem,
    /// SMEM.
    Smem,
}

/// The role of a buffer in the `pallas_call`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BufferRole {
    /// An input: holds this device's input atoms at kernel entry.
    Input,
    /// An output: undefined at entry; the specification says what it must hold at exit.
    Output,
    /// Scratch: undefined at entry.
    Scratch,
}

/// A buffer declaration. The shape is in cells, the granularity the protocol slices at;
/// each cell stands for `cell_bytes` bytes of the real array.
#[derive(Clone, Debug)]
pub struct BufferDecl {
    /// The kernel's name for the buffer (`hbm_buf`).
    pub name: String,
    /// Memory space.
    pub space: MemorySpace,
    /// Role.
    pub role: BufferRole,
    /// Shape in cells; empty for a buffer that is a single cell.
    pub shape: Vec<usize>,
    /// Bytes per cell, used for DMA sizes and semaphore amounts.
    pub cell_bytes: u32,
    /// One instance shared by every device (two TensorCores sharing HBM) instead of one
    /// per device.
    pub shared: bool,
}

impl BufferDecl {
    /// The number of cells.
    pub fn num_cells(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A semaphore kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum SemKind {
    /// `SemaphoreType.DMA`: counts bytes of completed DMAs.
    Dma,
    /// `SemaphoreType.REGULAR`: signalled and waited explicitly.
    Regular,
    /// The barrier semaphore of the `collective_id`: persists across invocations.
    Barrier,
}

impl fmt::Display for SemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SemKind::Dma => "DMA",
            SemKind::Regular => "REGULAR",
            SemKind::Barrier => "BARRIER",
        })
    }
}

/// A semaphore declaration: a scalar or an array (`SemaphoreType.DMA((n,))`).
#[derive(Clone, Debug)]
pub struct SemDecl {
    /// The kernel's name (`capacity_sem`).
    pub name: String,
    /// Kind.
    pub kind: SemKind,
    /// `Some(n)` for an array of `n` semaphores.
    pub len: Option<usize>,
    /// Allocated by `pl.run_scoped`.
    pub scoped: bool,
}

/// One index of a `.at[...]`: a single position (the dimension is dropped) or a
/// `pl.ds(start, size)` slice (the dimension is kept).
#[derive(Clone, Debug)]
pub enum Index {
    /// `.at[i]`
    At(Expr),
    /// `.at[pl.ds(start, size)]`
    Slice {
        /// First position.
        start: Expr,
        /// Number of positions (static, as in Pallas).
        size: usize,
    },
}

/// A view of a buffer: the buffer and the `.at[...]` applications, outermost first.
#[derive(Clone, Debug)]
pub struct RefExpr {
    /// The buffer.
    pub buffer: BufferId,
    /// Each `.at[...]` as its list of indices, applied to the view's remaining dimensions.
    pub indexing: Vec<Vec<Index>>,
}

/// A semaphore, or one element of a semaphore array.
#[derive(Clone, Debug)]
pub struct SemRef {
    /// The declaration.
    pub sem: SemId,
    /// The element of an array (`.at[i]`); `None` for a scalar semaphore.
    pub index: Option<Expr>,
}

/// The device a remote operation targets.
#[derive(Clone, Debug)]
pub enum Dest {
    /// This device (`device_id` absent).
    Own,
    /// Mesh coordinates, one per axis: `device_id=(target,)`.
    Mesh(Vec<Expr>),
    /// Named axes, the rest taken from this device: `device_id={'tc': 1 - core}`.
    Axes(Vec<(String, Expr)>),
}

/// A DMA descriptor built by `make_async_copy` or `make_async_remote_copy`.
#[derive(Clone, Debug)]
pub enum DmaDesc {
    /// A copy within this device (or its shared HBM).
    Local {
        /// Source view.
        src: RefExpr,
        /// Destination view.
        dst: RefExpr,
        /// Semaphore incremented by the copy's byte count when it is done.
        sem: SemRef,
    },
    /// A copy from this device into another device's memory.
    Remote {
        /// Source view, on this device.
        src: RefExpr,
        /// Destination view, resolved on the target device.
        dst: RefExpr,
        /// Semaphore on this device, incremented when the source has been read.
        send_sem: SemRef,
        /// Semaphore on the target device, incremented when the data has arrived.
        recv_sem: SemRef,
        /// The target device.
        device: Dest,
    },
}

/// Which half of a DMA wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPart {
    /// `.wait()`: `wait_send` then `wait_recv` for a remote copy; the one semaphore for a local copy.
    All,
    /// `.wait_send()`
    Send,
    /// `.wait_recv()`
    Recv,
}

/// The right-hand side of a local store.
#[derive(Clone, Debug)]
pub enum Rhs {
    /// `jnp.zeros_like(...)`: the empty sum.
    Zeros,
    /// A copy of another view.
    Load(RefExpr),
    /// An uninterpreted elementwise function of another view (`vmem * 2.0`), named by a
    /// template in which `{}` stands for the argument.
    Map {
        /// The template, e.g. `2*{}`.
        func: String,
        /// The argument.
        src: RefExpr,
    },
}

/// A statement of the kernel body.
#[derive(Clone, Debug)]
pub enum Stmt {
    /// `@pl.when(cond)`: run the body when `cond` is non-zero.
    When {
        /// The condition.
        cond: Expr,
        /// The guarded statements.
        body: Vec<Stmt>,
    },
    /// `pl.run_scoped`: the body with semaphores allocated for it.
    Scoped {
        /// The scoped semaphores.
        sems: Vec<SemId>,
        /// The statements of the scope.
        body: Vec<Stmt>,
    },
    /// `desc.start()`
    DmaStart(DmaDesc),
    /// `desc.wait()`, `desc.wait_send()` or `desc.wait_recv()`.
    DmaWait {
        /// The descriptor (its semaphores and size).
        dma: DmaDesc,
        /// Which wait.
        part: WaitPart,
    },
    /// `pl.semaphore_signal(sem, inc, device_id)`
    Signal {
        /// The semaphore, resolved on the target.
        sem: SemRef,
        /// The increment.
        inc: Expr,
        /// The target device.
        device: Dest,
    },
    /// `pl.semaphore_wait(sem, n)`
    Wait {
        /// The semaphore on this device.
        sem: SemRef,
        /// The amount.
        amount: Expr,
    },
    /// `dst[...] = rhs`
    Assign {
        /// Destination view.
        dst: RefExpr,
        /// Value.
        rhs: Rhs,
    },
    /// `dst[...] += src[...]`
    AddAssign {
        /// Destination view (read and written).
        dst: RefExpr,
        /// Source view.
        src: RefExpr,
    },
}

/// A traced kernel: what one `pallas_call` runs on every device.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The kernel's name, used in every error message.
    pub name: String,
    /// The grid; each device walks it in row-major order.
    pub grid: Vec<usize>,
    /// Buffer declarations, indexed by [`BufferId`].
    pub buffers: Vec<BufferDecl>,
    /// Semaphore declarations, indexed by [`SemId`].
    pub semaphores: Vec<SemDecl>,
    /// `CompilerParams(collective_id=...)`. A kernel with a collective id synchronises
    /// itself (with the barrier semaphore); one without gets Pallas' implicit entry barrier.
    pub collective_id: Option<u32>,
    /// The body.
    pub body: Vec<Stmt>,
}

impl Kernel {
    /// The buffer declaration, if the id exists.
    pub fn buffer(&self, id: BufferId) -> Option<&BufferDecl> {
        self.buffers.get(id.0 as usize)
    }

    /// The semaphore declaration, if the id exists.
    pub fn semaphore(&self, id: SemId) -> Option<&SemDecl> {
        self.semaphores.get(id.0 as usize)
    }

    /// Whether devices wait for each other at entry (no `collective_id`).
    pub fn implicit_entry_barrier(&self) -> bool {
        self.collective_id.is_none()
    }
}
