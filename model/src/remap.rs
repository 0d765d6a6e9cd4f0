//! Renumbering the buffers, semaphores and SMEM scalar arrays a kernel's statements name:
//! how the kernels of a program of several kernels ([`crate::ir::Launch`]) are merged into
//! one kernel whose declarations they share.

use crate::ir::{BufferId, Data, DmaDesc, RefExpr, Rhs, SemId, SemRef, Stmt, StmtKind};

/// Where each id of a kernel goes in the merged kernel.
#[derive(Clone, Debug, Default)]
pub struct IdMap {
    /// The merged buffer of each buffer of the kernel.
    pub buffers: Vec<BufferId>,
    /// The merged semaphore of each semaphore of the kernel.
    pub semaphores: Vec<SemId>,
    /// The merged scalar array of each scalar array of the kernel.
    pub scalars: Vec<usize>,
}

impl IdMap {
    fn buffer(&self, b: BufferId) -> BufferId {
        self.buffers.get(b.0 as usize).copied().unwrap_or(b)
    }

    fn sem(&self, s: SemId) -> SemId {
        self.semaphores.get(s.0 as usize).copied().unwrap_or(s)
    }

    fn scalar(&self, s: usize) -> usize {
        self.scalars.get(s).copied().unwrap_or(s)
    }
}

/// Renumbers every id the statements name (an id the map does not cover is kept).
pub fn remap(body: &mut [Stmt], map: &IdMap) {
    for stmt in body {
        match &mut stmt.kind {
            StmtKind::Scoped { sems, .. } => sems.iter_mut().for_each(|s| *s = map.sem(*s)),
            StmtKind::Launch(l) => {
                l.semaphores.iter_mut().chain(l.hands_out.iter_mut()).for_each(|s| *s = map.sem(*s));
            }
            StmtKind::DmaStart(d) | StmtKind::DmaWait { dma: d, .. } => dma(d, map),
            StmtKind::Signal { sem, .. } | StmtKind::Wait { sem, .. } => sem_ref(sem, map),
            StmtKind::Assign { dst, rhs } => {
                view(dst, map);
                match rhs {
                    Rhs::Zeros => {}
                    Rhs::Load(src) | Rhs::Map { src, .. } => view(src, map),
                    Rhs::Compute { value, .. } => data(value, map),
                }
            }
            StmtKind::AddAssign { dst, src } => {
                view(dst, map);
                view(src, map);
            }
            StmtKind::ScalarLoad { scalar, .. } | StmtKind::ScalarStore { scalar, .. } => *scalar = map.scalar(*scalar),
            StmtKind::ScalarCopy { scalar, source, .. } => {
                *scalar = map.scalar(*scalar);
                *source = map.scalar(*source);
            }
            StmtKind::When { .. } | StmtKind::Loop { .. } => {}
        }
        if let Some(children) = stmt.children_mut() {
            remap(children, map);
        }
    }
}

fn view(r: &mut RefExpr, map: &IdMap) {
    r.buffer = map.buffer(r.buffer);
}

fn sem_ref(s: &mut SemRef, map: &IdMap) {
    s.sem = map.sem(s.sem);
}

fn dma(d: &mut DmaDesc, map: &IdMap) {
    match d {
        DmaDesc::Local { src, dst, sem } => {
            view(src, map);
            view(dst, map);
            sem_ref(sem, map);
        }
        DmaDesc::Remote { src, dst, send_sem, recv_sem, .. } => {
            view(src, map);
            view(dst, map);
            sem_ref(send_sem, map);
            sem_ref(recv_sem, map);
        }
    }
}

fn data(d: &mut Data, map: &IdMap) {
    match d {
        Data::Load(r) => view(r, map),
        Data::Add(a, b) => {
            data(a, map);
            data(b, map);
        }
        Data::Apply { args, .. } => args.iter_mut().for_each(|a| data(a, map)),
        Data::Zeros | Data::Const(_) | Data::Index(_) => {}
    }
}
