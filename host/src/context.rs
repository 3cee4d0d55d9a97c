//! The primary context of each device, as this crate shares it: every
//! [`Gpu`](crate::Gpu) on a device holds a reference to the device's one
//! primary context, so clones and separately made `Gpu`s on one device see
//! the same memory, streams and faults.
//!
//! **Faults.** A kernel that faults (an illegal address, say) leaves a
//! *sticky* error: the context is unusable, every later driver call fails.
//! The first such error any call observes is recorded here, for the
//! context that was current (`record_fault`); from then on every
//! operation on a `Gpu` of that device, and every new `Gpu` of it, returns
//! [`Error::Faulted`] naming that first fault, before touching the driver,
//! so nothing hangs and nothing returns a stale result.
//!
//! **No recovery inside the process.** CUDA documents that after such an
//! error "the process must be terminated and relaunched", and the driver
//! enforces it: measured on an H100 with driver 580.159, after an illegal
//! address `cuDevicePrimaryCtxRetain` and `cuCtxCreate` both fail with
//! `CUDA_ERROR_ILLEGAL_ADDRESS`, also after `cuDevicePrimaryCtxReset` and
//! after every reference to the primary context was released. A program
//! that must survive faulting kernels runs its GPU work in a child process
//! and starts a new one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cust::sys::{CUcontext, CUdevice};

use crate::driver;
use crate::error::{DriverError, Error, Result};

/// The first fault of a context: the sticky error, and the kernel whose
/// synchronized launch reported it, when one did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The driver's error (`CUDA_ERROR_ILLEGAL_ADDRESS`, …) and the call
    /// that observed it.
    pub error: DriverError,
    /// The kernel that faulted, when launches were synchronized (see
    /// [`Gpu::set_sync_launches`](crate::Gpu::set_sync_launches)); `None`
    /// when the fault surfaced in a later call.
    pub kernel: Option<&'static str>,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kernel {
            Some(k) => write!(f, "kernel `{k}` faulted: {}", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

/// A device's primary context in this process.
pub(crate) struct DeviceState {
    ordinal: u32,
    dev: CUdevice,
    raw: Mutex<CUcontext>,
    faulted: AtomicBool,
    fault: Mutex<Option<Fault>>,
}

// SAFETY: the raw context is an identity and an argument to thread-safe
// driver calls; every other field is Send + Sync.
unsafe impl Send for DeviceState {}
// SAFETY: as above.
unsafe impl Sync for DeviceState {}

impl DeviceState {
    fn new(ordinal: u32, dev: CUdevice) -> DeviceState {
        DeviceState {
            ordinal,
            dev,
            raw: Mutex::new(std::ptr::null_mut()),
            faulted: AtomicBool::new(false),
            fault: Mutex::new(None),
        }
    }

    /// [`Error::Faulted`] when the device has faulted.
    fn check(&self) -> Result<()> {
        match self.faulted.load(Ordering::Acquire).then(|| self.fault()).flatten() {
            Some(fault) => Err(Error::Faulted { fault: Box::new(fault) }),
            None => Ok(()),
        }
    }

    fn fault(&self) -> Option<Fault> {
        self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Each device's context in this process.
static DEVICES: Mutex<Vec<Arc<DeviceState>>> = Mutex::new(Vec::new());

/// Records `e`, a sticky error observed while `raw` was current, as that
/// context's fault unless it has one already; `kernel` names the kernel
/// whose synchronized launch reported it (a later call naming the kernel
/// fills in a fault recorded without one).
pub(crate) fn record_fault(raw: CUcontext, e: &DriverError, kernel: Option<&'static str>) {
    if raw.is_null() {
        return;
    }
    let devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    for state in devices.iter() {
        if *state.raw.lock().unwrap_or_else(|p| p.into_inner()) != raw {
            continue;
        }
        let mut fault = state.fault.lock().unwrap_or_else(|p| p.into_inner());
        match fault.as_mut() {
            None => *fault = Some(Fault { error: e.clone(), kernel }),
            Some(f) if f.kernel.is_none() && f.error.code == e.code => f.kernel = kernel,
            Some(_) => {}
        }
        state.faulted.store(true, Ordering::Release);
    }
}

/// A retained reference to a device's primary context, released on drop.
pub(crate) struct Ctx {
    raw: CUcontext,
    state: Arc<DeviceState>,
}

// SAFETY: as for DeviceState.
unsafe impl Send for Ctx {}
// SAFETY: as above.
unsafe impl Sync for Ctx {}

impl Ctx {
    /// The raw handle (an identity: equal for every `Ctx` of one device).
    pub(crate) fn raw(&self) -> CUcontext {
        self.raw
    }

    /// Makes the context current on this thread, unless it has faulted:
    /// then [`Error::Faulted`] naming the first fault.
    pub(crate) fn bind(&self) -> Result<()> {
        self.state.check()?;
        Ok(driver::set_current(self.raw)?)
    }

    /// The first fault, if any.
    pub(crate) fn fault(&self) -> Option<Fault> {
        self.state.fault()
    }

    /// Makes the context current for a drop that frees through it: `true`
    /// when that worked (after a fault the frees fail harmlessly, and
    /// their errors are ignored).
    pub(crate) fn enter(&self) -> bool {
        driver::set_current(self.raw).is_ok()
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let _ = driver::primary_ctx_release(self.state.dev);
    }
}

/// A reference to device `ordinal`'s primary context, made current on this
/// thread; [`Error::Faulted`] once the device has faulted in this process.
pub(crate) fn retain(ordinal: u32, dev: CUdevice) -> Result<Arc<Ctx>> {
    let state = {
        let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
        match devices.iter().find(|s| s.ordinal == ordinal) {
            Some(s) => s.clone(),
            None => {
                let fresh = Arc::new(DeviceState::new(ordinal, dev));
                devices.push(fresh.clone());
                fresh
            }
        }
    };
    state.check()?;
    // The registry lock is not held here: a sticky error from these calls
    // records its fault through it.
    let raw = driver::primary_ctx_retain(dev)?;
    *state.raw.lock().unwrap_or_else(|p| p.into_inner()) = raw;
    let ctx = Ctx { raw, state };
    driver::set_current(raw)?;
    Ok(Arc::new(ctx))
}
