//! JVMTI raw monitors with RAII: entering returns a guard that exits on drop, so no early return can
//! leave a monitor held.

use std::time::Duration;

use crate::error::{check, Error, Result};
use crate::{sys, Jvmti};

/// A raw monitor, destroyed on drop.
#[derive(Debug)]
pub struct RawMonitor {
    env: Jvmti,
    id: sys::jrawMonitorID,
}

// SAFETY: raw monitors are designed for use from any thread of the process.
unsafe impl Send for RawMonitor {}
// SAFETY: as above; all state is inside the JVM and synchronised there.
unsafe impl Sync for RawMonitor {}

/// Calls a raw-monitor function of the environment; `None` slots map to NOT_AVAILABLE.
macro_rules! monitor_call {
    ($m:expr, $name:ident $(, $arg:expr)*) => {{
        let env = $m.env.as_raw();
        // SAFETY: `env` is live (Jvmti invariant) and `id` a monitor created in it, not yet destroyed.
        unsafe {
            match (**env).$name {
                Some(f) => check(stringify!($name), f(env, $m.id $(, $arg)*)),
                None => Err(Error::Jvmti { function: stringify!($name), code: sys::JVMTI_ERROR_NOT_AVAILABLE }),
            }
        }
    }};
}

impl RawMonitor {
    /// # Safety
    /// `id` must be a monitor created in `env` and owned by nobody else.
    pub(crate) unsafe fn from_raw(env: Jvmti, id: sys::jrawMonitorID) -> Self {
        RawMonitor { env, id }
    }

    /// Enters the monitor (re-entrant) until the guard drops.
    pub fn enter(&self) -> Result<MonitorGuard<'_>> {
        monitor_call!(self, RawMonitorEnter)?;
        Ok(MonitorGuard { monitor: self })
    }
}

impl Drop for RawMonitor {
    fn drop(&mut self) {
        let _ = monitor_call!(self, DestroyRawMonitor);
    }
}

/// Proof that the current thread holds a raw monitor.
#[derive(Debug)]
pub struct MonitorGuard<'m> {
    monitor: &'m RawMonitor,
}

impl MonitorGuard<'_> {
    /// Waits for a notification or `timeout` (zero waits forever), releasing the monitor meanwhile.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let ms = sys::jlong::try_from(timeout.as_millis()).unwrap_or(sys::jlong::MAX);
        monitor_call!(self.monitor, RawMonitorWait, ms)
    }

    pub fn notify_all(&self) -> Result<()> {
        monitor_call!(self.monitor, RawMonitorNotifyAll)
    }
}

impl Drop for MonitorGuard<'_> {
    fn drop(&mut self) {
        let _ = monitor_call!(self.monitor, RawMonitorExit);
    }
}
