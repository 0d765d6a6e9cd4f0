//! Programs of several kernels ([`Launch`]): JAX's build rules per launch, and how long
//! each semaphore lives.

use super::build_rules;
use crate::error::{ErrorKind, ModelError};
use crate::ir::{DmaDesc, Kernel, Launch, SemId, Stmt, StmtKind};

/// Checks a program of several kernels: every top-level statement is a launch, no launch
/// is nested, each launch passes JAX's `collective_id` rules on its own and uses only the
/// semaphores it takes (which are declared).
pub(super) fn validate(kernel: &Kernel) -> Result<(), ModelError> {
    let bad = |m: String| ModelError::new(ErrorKind::BadDeclaration, m);
    for stmt in &kernel.body {
        let StmtKind::Launch(l) = &stmt.kind else {
            return Err(bad("a program of several kernels has only launches of kernels at its top level".into()));
        };
        let name = format!("kernel {}", l.name);
        build_rules(l.has_custom_barrier(kernel), l.collective_id, l.allow_collective_id_without_custom_barrier)
            .map_err(|e| e.context(&name))?;
        for &s in l.semaphores.iter().chain(&l.hands_out) {
            if kernel.semaphore(s).is_none() {
                return Err(bad(format!("{name}: semaphore #{} is not declared", s.0)));
            }
        }
        if let Some(s) = l.hands_out.iter().find(|s| !l.semaphores.contains(s)) {
            return Err(bad(format!("{name}: hands out semaphore #{} it does not take", s.0)));
        }
        let mut used = Vec::new();
        uses(&l.body, &mut used)?;
        if let Some(s) = used.iter().find(|s| !l.semaphores.contains(s)) {
            let sem = kernel.semaphore(*s).map_or_else(|| format!("#{}", s.0), |d| format!("`{}`", d.name));
            return Err(bad(format!("{name}: uses semaphore {sem}, which it does not take")));
        }
    }
    Ok(())
}

/// The semaphores the statements use, appended to `out`; an error for a nested launch.
pub(crate) fn uses(body: &[Stmt], out: &mut Vec<SemId>) -> Result<(), ModelError> {
    for stmt in body {
        match &stmt.kind {
            StmtKind::Launch(l) => {
                return Err(ModelError::new(
                    ErrorKind::BadDeclaration,
                    format!("kernel {}: a launch of a kernel is only allowed at the top of a program", l.name),
                ));
            }
            StmtKind::Scoped { sems, .. } => out.extend(sems),
            StmtKind::DmaStart(d) | StmtKind::DmaWait { dma: d, .. } => match d {
                DmaDesc::Local { sem, .. } => out.push(sem.sem),
                DmaDesc::Remote { send_sem, recv_sem, .. } => out.extend([send_sem.sem, recv_sem.sem]),
            },
            StmtKind::Signal { sem, .. } | StmtKind::Wait { sem, .. } => out.push(sem.sem),
            _ => {}
        }
        uses(stmt.children(), out)?;
    }
    Ok(())
}

/// The kernels a device's program runs in turn, by name: the kernel itself, or the
/// launches of a program of several kernels.
pub(super) fn kernel_names(kernel: &Kernel) -> Vec<String> {
    match kernel.is_program() {
        true => kernel.launches().iter().map(|l| l.name.clone()).collect(),
        false => vec![kernel.name.clone()],
    }
}

/// For every semaphore of a device (`sem_base[decl] + element`), the last kernel of the
/// program (an index into [`kernel_names`]) in which it is alive: the last launch that
/// takes it, or the last launch of all when that one hands it out. 0 for every semaphore
/// of a kernel that is not a program.
pub(super) fn semaphore_lifetimes(kernel: &Kernel, sem_base: &[usize], sems_per_device: usize) -> Vec<u32> {
    let mut last = vec![0u32; sems_per_device];
    let launches: Vec<&Launch> = kernel.launches();
    let end = launches.len().saturating_sub(1) as u32;
    for (i, (decl, &base)) in kernel.semaphores.iter().zip(sem_base).enumerate() {
        let id = SemId(i as u32);
        let Some(at) = launches.iter().rposition(|l| l.semaphores.contains(&id)) else { continue };
        let until = if launches[at].hands_out.contains(&id) { end } else { at as u32 };
        for slot in last.iter_mut().skip(base).take(decl.len.unwrap_or(1)) {
            *slot = until;
        }
    }
    last
}
