//! The primary context of each device, as this crate shares it: every
//! [`Gpu`](crate::Gpu) on a device holds a reference to the device's one
//! primary context, so clones and separately made `Gpu`s on one device see
//! the same memory, streams and faults.
//!
//! **Faults.** A kernel that faults (an illegal address, say) leaves a
//! *sticky* error: the context is unusable, every later driver call fails.
//! The first such error any call observes is recorded here, for the
//! context that was current ([`record_fault`]); from then on every
//! operation on a `Gpu` of that context returns [`Error::Faulted`] naming
//! it, before touching the driver, so nothing hangs and nothing returns a
//! stale result.
//!
//! **Recovery.** A `Gpu` made after a fault starts a new *generation* of
//! the device's context: [`retain`] resets the primary context
//! (`cuDevicePrimaryCtxReset`), which frees everything the old generation
//! held. The old generation's objects stay faulted, and their drops free
//! nothing (the reset did): [`Ctx::alive`] tells them, under a lock the
//! reset takes exclusively, so no free races the reset.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

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

/// One generation of a device's primary context.
pub(crate) struct DeviceState {
    ordinal: u32,
    dev: CUdevice,
    generation: u64,
    raw: Mutex<CUcontext>,
    faulted: AtomicBool,
    fault: Mutex<Option<Fault>>,
    /// True once the context was reset after this generation: its handles
    /// and allocations no longer exist. Frees hold the read side.
    gone: RwLock<bool>,
}

// SAFETY: the raw context is an identity and an argument to thread-safe
// driver calls; every other field is Send + Sync.
unsafe impl Send for DeviceState {}
// SAFETY: as above.
unsafe impl Sync for DeviceState {}

impl DeviceState {
    fn new(ordinal: u32, dev: CUdevice, generation: u64) -> DeviceState {
        DeviceState {
            ordinal,
            dev,
            generation,
            raw: Mutex::new(std::ptr::null_mut()),
            faulted: AtomicBool::new(false),
            fault: Mutex::new(None),
            gone: RwLock::new(false),
        }
    }

    fn fault(&self) -> Option<Fault> {
        self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The current generation of each device's context in this process.
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

/// A retained reference to one generation of a device's primary context.
/// Released on drop (the driver allows that after a reset too).
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
        self.check()?;
        Ok(driver::set_current(self.raw)?)
    }

    /// [`Error::Faulted`] when the context has faulted.
    pub(crate) fn check(&self) -> Result<()> {
        match self.state.faulted.load(Ordering::Acquire).then(|| self.state.fault()).flatten() {
            Some(fault) => Err(Error::Faulted { fault: Box::new(fault), generation: self.state.generation }),
            None => Ok(()),
        }
    }

    /// The first fault, if any.
    pub(crate) fn fault(&self) -> Option<Fault> {
        self.state.fault()
    }

    /// While the guard lives, this generation's handles exist (no reset
    /// can run): `Some` for a drop to free through, with the context
    /// current; `None` after a reset (the drop frees nothing).
    pub(crate) fn alive(&self) -> Option<RwLockReadGuard<'_, bool>> {
        let guard = self.state.gone.read().unwrap_or_else(|p| p.into_inner());
        if *guard {
            return None;
        }
        driver::set_current(self.raw).ok()?;
        Some(guard)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let _ = driver::primary_ctx_release(self.state.dev);
    }
}

/// Serializes [`retain`]: one reset of a device at a time. (The registry
/// lock itself is never held across a driver call: a sticky error in such
/// a call records its fault through the registry.)
static RETAIN: Mutex<()> = Mutex::new(());

/// A reference to device `ordinal`'s primary context, made current on this
/// thread. If the context's current generation has faulted, it is reset
/// first and a new generation starts (see the module documentation).
pub(crate) fn retain(ordinal: u32, dev: CUdevice) -> Result<Arc<Ctx>> {
    let _one = RETAIN.lock().unwrap_or_else(|p| p.into_inner());
    let current = {
        let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
        match devices.iter().find(|s| s.ordinal == ordinal) {
            Some(s) => s.clone(),
            None => {
                let fresh = Arc::new(DeviceState::new(ordinal, dev, 0));
                devices.push(fresh.clone());
                fresh
            }
        }
    };
    let state = if current.faulted.load(Ordering::Acquire) {
        {
            let mut gone = current.gone.write().unwrap_or_else(|p| p.into_inner());
            *gone = true;
            // SAFETY: every object of the old generation checks `gone`
            // (under the read lock this write lock excludes) before it
            // frees, and fails with its fault before any other use.
            unsafe { driver::primary_ctx_reset(dev)? };
        }
        let fresh = Arc::new(DeviceState::new(ordinal, dev, current.generation + 1));
        let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
        devices.retain(|s| s.ordinal != ordinal);
        devices.push(fresh.clone());
        fresh
    } else {
        current
    };
    let raw = driver::primary_ctx_retain(dev)?;
    *state.raw.lock().unwrap_or_else(|p| p.into_inner()) = raw;
    let ctx = Ctx { raw, state };
    driver::set_current(raw)?;
    Ok(Arc::new(ctx))
}

/// True when device `ordinal`'s current generation has faulted (a `Gpu`
/// made now would reset it first).
pub(crate) fn faulted(ordinal: u32) -> bool {
    DEVICES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|s| s.ordinal == ordinal && s.faulted.load(Ordering::Acquire))
}
