//! DMA starts and waits, and what they name: amounts, destination devices, semaphores.

use super::{Compiler, Here};
use crate::error::{ErrorKind, ModelError};
use crate::expr::Expr;
use crate::ir::{Dest, DmaDesc, RefExpr, SemKind, SemRef, WaitPart};
use crate::mesh::DeviceId;
use crate::program::{CellId, Op, SemSlot};

impl Compiler<'_> {
    pub(super) fn dma_start(&mut self, desc: &DmaDesc, here: &Here<'_>) -> Result<(Op, String), ModelError> {
        match desc {
            DmaDesc::Local { src, dst, sem } => {
                let what = format!("make_async_copy({} -> {})", self.buffer_name(src), self.buffer_name(dst));
                let (s, sb) = self.cells_of(src, here.device, here, &what)?;
                let (d, db) = self.cells_of(dst, here.device, here, &what)?;
                self.same_size(&s, sb, &d, db, here, &what)?;
                let slot = self.sem(sem, here, &what, &[SemKind::Dma], here.device)?;
                let label = format!(
                    "start local_copy {} -> {} ({})",
                    self.view_name(&s),
                    self.view_name(&d),
                    self.sem_name(slot)
                );
                Ok((Op::LocalDma { src: self.span(s), dst: self.span(d), sem: slot, bytes: sb }, label))
            }
            DmaDesc::Remote { src, dst, send_sem, recv_sem, device } => {
                let what = format!("make_async_remote_copy({} -> {})", self.buffer_name(src), self.buffer_name(dst));
                let target = self.dest(device, here, &what)?;
                let (s, sb) = self.cells_of(src, here.device, here, &what)?;
                let (d, db) = self.cells_of(dst, target, here, &what)?;
                self.same_size(&s, sb, &d, db, here, &what)?;
                let send = self.sem(send_sem, here, &what, &[SemKind::Dma], here.device)?;
                let recv = self.sem(recv_sem, here, &what, &[SemKind::Dma], target)?;
                let label = format!(
                    "start remote_copy {} -> {target} {} ({}, {})",
                    self.view_name(&s),
                    self.view_name(&d),
                    self.sem_name(send),
                    self.sem_name(recv)
                );
                let op = Op::RemoteDma {
                    src: self.span(s),
                    dst: self.span(d),
                    target,
                    send_sem: send,
                    recv_sem: recv,
                    bytes: sb,
                };
                Ok((op, label))
            }
        }
    }

    /// The waits of a DMA descriptor's `.wait()` (`part`: both halves of a remote copy's,
    /// or one). A wait is checked the way Mosaic checks it, not as the copy it may never
    /// make: its semaphore, and the byte count of its views (equal for the source and the
    /// destination), whose indices computed per device need not be in range (a receiver's
    /// descriptor built from the sender's offsets only counts the bytes of a copy another
    /// device starts); the destination device of a remote wait is not named.
    pub(super) fn dma_waits(
        &mut self,
        desc: &DmaDesc,
        part: WaitPart,
        here: &Here<'_>,
    ) -> Result<Vec<(Op, String)>, ModelError> {
        let mut waits = Vec::new();
        match desc {
            DmaDesc::Local { src, dst, sem } => {
                let what = format!("make_async_copy({} -> {}).wait()", self.buffer_name(src), self.buffer_name(dst));
                let bytes = self.wait_amount(src, dst, here, &what)?;
                let sem = self.sem(sem, here, &what, &[SemKind::Dma], here.device)?;
                waits
                    .push((Op::Wait { sem, amount: bytes }, format!("wait {} {bytes} (dma wait)", self.sem_name(sem))));
            }
            DmaDesc::Remote { src, dst, send_sem, recv_sem, .. } => {
                let what =
                    format!("make_async_remote_copy({} -> {}).wait()", self.buffer_name(src), self.buffer_name(dst));
                let bytes = self.wait_amount(src, dst, here, &what)?;
                if part != WaitPart::Recv {
                    let send = self.sem(send_sem, here, &what, &[SemKind::Dma], here.device)?;
                    waits.push((
                        Op::Wait { sem: send, amount: bytes },
                        format!("wait {} {bytes} (wait_send)", self.sem_name(send)),
                    ));
                }
                if part != WaitPart::Send {
                    // wait_recv waits on the receive semaphore of *this* device.
                    let own = self.sem(recv_sem, here, "wait_recv", &[SemKind::Dma], here.device)?;
                    waits.push((
                        Op::Wait { sem: own, amount: bytes },
                        format!("wait {} {bytes} (wait_recv)", self.sem_name(own)),
                    ));
                }
            }
        }
        Ok(waits)
    }

    /// The bytes a wait on a descriptor counts: its source's, which must be its
    /// destination's ([`Compiler::wait_bytes`]).
    fn wait_amount(&self, src: &RefExpr, dst: &RefExpr, here: &Here<'_>, what: &str) -> Result<u32, ModelError> {
        let sb = self.wait_bytes(src, here, what)?;
        let db = self.wait_bytes(dst, here, what)?;
        if sb != db {
            return Err(self.err(
                here,
                what,
                ErrorKind::SizeMismatch,
                format!("source is {sb} bytes; destination is {db} bytes"),
            ));
        }
        Ok(sb)
    }

    pub(super) fn same_size(
        &self,
        s: &[CellId],
        sb: u32,
        d: &[CellId],
        db: u32,
        here: &Here<'_>,
        what: &str,
    ) -> Result<(), ModelError> {
        if s.len() != d.len() || sb != db {
            return Err(self.err(
                here,
                what,
                ErrorKind::SizeMismatch,
                format!("source is {} cell(s), {sb} bytes; destination is {} cell(s), {db} bytes", s.len(), d.len()),
            ));
        }
        Ok(())
    }

    pub(super) fn amount(&self, e: &Expr, here: &Here<'_>, what: &str) -> Result<u32, ModelError> {
        let v = self.eval(e, here, what)?;
        u32::try_from(v)
            .map_err(|_| self.err(here, what, ErrorKind::BadExpression, format!("amount {v} is not in 0..=u32::MAX")))
    }

    pub(super) fn dest(&self, dest: &Dest, here: &Here<'_>, what: &str) -> Result<DeviceId, ModelError> {
        let mut coords: Vec<i64> = self.mesh.coords(here.device).iter().map(|&c| c as i64).collect();
        match dest {
            Dest::Own => return Ok(here.device),
            Dest::Logical(e) => {
                let v = self.eval(e, here, what)?;
                return usize::try_from(v)
                    .ok()
                    .filter(|&i| i < self.mesh.num_devices())
                    .map(|i| DeviceId(i as u16))
                    .ok_or_else(|| {
                        self.err(
                            here,
                            what,
                            ErrorKind::DeviceOffMesh,
                            format!("logical device id {v} is off the mesh ({})", self.mesh),
                        )
                    });
            }
            Dest::Mesh(es) => {
                if es.len() != coords.len() {
                    return Err(self.err(
                        here,
                        what,
                        ErrorKind::DeviceOffMesh,
                        format!(
                            "device_id has {} coordinate(s), the mesh ({}) has {} axes",
                            es.len(),
                            self.mesh,
                            coords.len()
                        ),
                    ));
                }
                for (c, e) in coords.iter_mut().zip(es) {
                    *c = self.eval(e, here, what)?;
                }
            }
            Dest::Axes(axes) => {
                for (name, e) in axes {
                    let pos = self.mesh.axis_position(name).ok_or_else(|| {
                        self.err(
                            here,
                            what,
                            ErrorKind::DeviceOffMesh,
                            format!("device_id names axis `{name}`, which the mesh ({}) lacks", self.mesh),
                        )
                    })?;
                    coords[pos] = self.eval(e, here, what)?;
                }
            }
        }
        self.mesh.device_at(&coords).ok_or_else(|| {
            self.err(
                here,
                what,
                ErrorKind::DeviceOffMesh,
                format!("device id {coords:?} is off the mesh ({})", self.mesh),
            )
        })
    }

    pub(super) fn sem(
        &self,
        r: &SemRef,
        here: &Here<'_>,
        what: &str,
        kinds: &[SemKind],
        on: DeviceId,
    ) -> Result<SemSlot, ModelError> {
        let decl = self.kernel.semaphore(r.sem).ok_or_else(|| {
            self.err(
                here,
                what,
                ErrorKind::UnknownSemaphore,
                format!("semaphore #{} is not declared by this kernel", r.sem.0),
            )
        })?;
        if !kinds.contains(&decl.kind) {
            let want: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            return Err(self.err(
                here,
                what,
                ErrorKind::WrongSemaphoreKind,
                format!("`{}` is a {} semaphore; this needs {}", decl.name, decl.kind, want.join(" or ")),
            ));
        }
        let offset = match (decl.len, &r.index) {
            (None, None) => 0,
            (None, Some(_)) => {
                return Err(self.err(
                    here,
                    what,
                    ErrorKind::OutOfRange,
                    format!("`{}` is not a semaphore array", decl.name),
                ))
            }
            (Some(_), None) => {
                return Err(self.err(
                    here,
                    what,
                    ErrorKind::OutOfRange,
                    format!("semaphore array `{}` used without .at[i]", decl.name),
                ))
            }
            (Some(n), Some(i)) => {
                let v = i.eval(&here.env()).map_err(|err| {
                    let problem = format!("semaphore array `{}`: {}", decl.name, err.message());
                    self.err(here, what, ErrorKind::BadExpression, problem)
                })?;
                if v < 0 || v as usize >= n {
                    return Err(self.err(
                        here,
                        what,
                        ErrorKind::OutOfRange,
                        format!("index {v} out of range for semaphore array `{}` of length {n}", decl.name),
                    ));
                }
                v as usize
            }
        };
        let local = self.sem_base[r.sem.0 as usize] + offset;
        Ok(SemSlot((on.index() * self.sems_per_device + local) as u32))
    }
}
