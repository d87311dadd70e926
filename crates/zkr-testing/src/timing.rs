//! Timeouts for tests, scaled for slow machines.

use std::time::Duration;

/// The environment variable that scales every [`Timing`] duration (a positive float).
pub const TIMING_MULTIPLIER_ENV: &str = "ZKR_TIMING_MULTIPLIER";

/// Base timeouts for tests, multiplied by `ZKR_TIMING_MULTIPLIER` (Curator's `Timing` with its
/// `timing-multiple` property).
///
/// Use these as upper bounds when awaiting events, never as sleeps.
///
/// # Examples
///
/// ```
/// let timing = zkr_testing::Timing::new(2.0);
/// assert_eq!(timing.session(), std::time::Duration::from_secs(6));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    multiplier: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Self::from_env()
    }
}

impl Timing {
    /// Base session timeout for tests that expire sessions: 3 s.
    pub const BASE_SESSION: Duration = Duration::from_secs(3);
    /// Base connection timeout: 2 s.
    pub const BASE_CONNECTION: Duration = Duration::from_secs(2);
    /// Base bound for awaiting an event that should happen promptly: 30 s.
    pub const BASE_WAIT: Duration = Duration::from_secs(30);

    /// A timing with an explicit multiplier (values that are not finite and positive mean 1).
    pub fn new(multiplier: f64) -> Self {
        let multiplier = if multiplier.is_finite() && multiplier > 0.0 { multiplier } else { 1.0 };
        Timing { multiplier }
    }

    /// Reads the multiplier from `ZKR_TIMING_MULTIPLIER` (default 1).
    pub fn from_env() -> Self {
        let m = std::env::var(TIMING_MULTIPLIER_ENV).ok().and_then(|v| v.trim().parse::<f64>().ok());
        Self::new(m.unwrap_or(1.0))
    }

    /// The multiplier in force.
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// Scales any duration by the multiplier.
    pub fn multiple(&self, base: Duration) -> Duration {
        base.mul_f64(self.multiplier)
    }

    /// A short session timeout for tests that need sessions to expire.
    pub fn session(&self) -> Duration {
        self.multiple(Self::BASE_SESSION)
    }

    /// A connection timeout.
    pub fn connection(&self) -> Duration {
        self.multiple(Self::BASE_CONNECTION)
    }

    /// The bound for awaiting an event in a test.
    pub fn wait(&self) -> Duration {
        self.multiple(Self::BASE_WAIT)
    }

    /// A session timeout plus two thirds of one: long enough that a session that lost its
    /// connection has certainly expired on the server (Curator's `forSessionSleep`).
    pub fn session_sleep(&self) -> Duration {
        self.session().mul_f64(1.75)
    }
}
