//! Restart strategies (`settings.restart`, issue 41), with Flink's meanings:
//!
//! - `exponential` (the default): the delay starts at `initial_delay_ms` and grows by
//!   `multiplier` after each failure up to `max_delay_ms`, each delay spread by ±`jitter`; an
//!   attempt that ran `reset_after_ms` without failing resets it (and the count). `attempts`
//!   bounds the restarts between resets (default: none).
//! - `failure_rate`: at most `max_failures` failures within any `interval_ms`, `delay_ms` apart.
//! - `fixed`: at most `attempts` restarts, `delay_ms` apart; with `window_ms`, only the
//!   failures within the last `window_ms` count.
//!
//! A spec written before strategies (`{ "attempts": 3, "delay_ms": 100 }`, no `strategy`)
//! means `fixed`, as it did. Only failures that count use up attempts: the runtime does not
//! count the platform's own (a lost worker, a server restarting) — [`RestartTracker::failed`]
//! takes whether a failure counts.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How a job restarts after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RestartStrategy {
    /// Growing delays, reset after a stable period.
    Exponential,
    /// At most `max_failures` failures per `interval_ms`.
    FailureRate,
    /// At most `attempts` restarts (within `window_ms`, when given).
    Fixed,
}

/// `settings.restart`: the strategy and its parameters (those of another strategy are
/// refused).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RestartSettings {
    /// The strategy; when absent, the one whose own parameters are given (`attempts` and
    /// `delay_ms` alone: `fixed`, the form of specs written before strategies), else
    /// `exponential`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RestartStrategy>,
    /// `fixed`: restarts before the job fails (default 3; 0: never restart). `exponential`:
    /// restarts between two resets before the job fails (default: no bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// `fixed`, `failure_rate`: the pause before each restart (default 1,000 ms; 100 ms for a
    /// spec without `strategy`, as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// `fixed`: count only the failures within this window (default: the job's whole life).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
    /// `exponential`: the first delay (default 1,000 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_delay_ms: Option<u64>,
    /// `exponential`: the longest delay (default 60,000 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<u64>,
    /// `exponential`: the factor from one delay to the next (default 1.5; at least 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<f64>,
    /// `exponential`: each delay is spread uniformly by ± this share of it (default 0.1; 0 to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// `exponential`: an attempt that runs this long without failing resets the delay and
    /// the count (default 3,600,000 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset_after_ms: Option<u64>,
    /// `failure_rate`: the most failures within `interval_ms` (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<u32>,
    /// `failure_rate`: the interval (default 60,000 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
}

/// A strategy with every parameter resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Strategy {
    /// See [`RestartStrategy::Exponential`].
    Exponential {
        /// The first delay.
        initial: Duration,
        /// The longest delay.
        max: Duration,
        /// From one delay to the next.
        multiplier: f64,
        /// ± this share of each delay.
        jitter: f64,
        /// A stable attempt this long resets the delay and the count.
        reset_after: Duration,
        /// Restarts between resets (`None`: no bound).
        attempts: Option<u32>,
    },
    /// See [`RestartStrategy::FailureRate`].
    FailureRate {
        /// The most failures within `interval`.
        max_failures: u32,
        /// The interval.
        interval: Duration,
        /// The pause before each restart.
        delay: Duration,
    },
    /// See [`RestartStrategy::Fixed`].
    Fixed {
        /// Restarts before the job fails.
        attempts: u32,
        /// The pause before each restart.
        delay: Duration,
        /// Only failures within this window count.
        window: Option<Duration>,
    },
}

impl RestartSettings {
    /// The old default's form: `fixed`, `attempts` restarts `delay_ms` apart.
    pub fn fixed(attempts: u32, delay_ms: u64) -> Self {
        RestartSettings {
            strategy: Some(RestartStrategy::Fixed),
            attempts: Some(attempts),
            delay_ms: Some(delay_ms),
            ..RestartSettings::default()
        }
    }

    /// The strategy in effect: the one named, else the one whose own parameters are given
    /// (`attempts` and `delay_ms` alone: `fixed`, the form before strategies), else
    /// `exponential`.
    pub fn kind(&self) -> RestartStrategy {
        if let Some(strategy) = self.strategy {
            return strategy;
        }
        let exponential = self.initial_delay_ms.is_some()
            || self.max_delay_ms.is_some()
            || self.multiplier.is_some()
            || self.jitter.is_some()
            || self.reset_after_ms.is_some();
        if exponential {
            RestartStrategy::Exponential
        } else if self.max_failures.is_some() || self.interval_ms.is_some() {
            RestartStrategy::FailureRate
        } else if self.attempts.is_some() || self.delay_ms.is_some() || self.window_ms.is_some() {
            RestartStrategy::Fixed
        } else {
            RestartStrategy::Exponential
        }
    }

    /// The strategy with every parameter resolved, or why the settings do not hold together.
    pub fn resolve(&self) -> Result<Strategy, String> {
        let kind = self.kind();
        let given = |name: &str, set: bool| -> Result<(), String> {
            if set {
                return Err(format!(
                    "settings.restart.{name} is not a parameter of the `{}` strategy",
                    serde_json::to_value(kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                ));
            }
            Ok(())
        };
        let ms = Duration::from_millis;
        match kind {
            RestartStrategy::Exponential => {
                given("delay_ms", self.delay_ms.is_some())?;
                given("window_ms", self.window_ms.is_some())?;
                given("max_failures", self.max_failures.is_some())?;
                given("interval_ms", self.interval_ms.is_some())?;
                let initial = self.initial_delay_ms.unwrap_or(1_000);
                let max = self.max_delay_ms.unwrap_or(60_000);
                if max < initial {
                    return Err(format!(
                        "settings.restart.max_delay_ms ({max}) is below initial_delay_ms ({initial})"
                    ));
                }
                let multiplier = self.multiplier.unwrap_or(1.5);
                if !(1.0..=100.0).contains(&multiplier) {
                    return Err(format!(
                        "settings.restart.multiplier must be from 1 to 100, not {multiplier}"
                    ));
                }
                let jitter = self.jitter.unwrap_or(0.1);
                if !(0.0..=1.0).contains(&jitter) {
                    return Err(format!("settings.restart.jitter must be from 0 to 1, not {jitter}"));
                }
                Ok(Strategy::Exponential {
                    initial: ms(initial),
                    max: ms(max),
                    multiplier,
                    jitter,
                    reset_after: ms(self.reset_after_ms.unwrap_or(3_600_000)),
                    attempts: self.attempts,
                })
            }
            RestartStrategy::FailureRate => {
                for (name, set) in [
                    ("attempts", self.attempts.is_some()),
                    ("window_ms", self.window_ms.is_some()),
                    ("initial_delay_ms", self.initial_delay_ms.is_some()),
                    ("max_delay_ms", self.max_delay_ms.is_some()),
                    ("multiplier", self.multiplier.is_some()),
                    ("jitter", self.jitter.is_some()),
                    ("reset_after_ms", self.reset_after_ms.is_some()),
                ] {
                    given(name, set)?;
                }
                let interval = self.interval_ms.unwrap_or(60_000);
                if interval == 0 {
                    return Err("settings.restart.interval_ms must be above 0".into());
                }
                Ok(Strategy::FailureRate {
                    max_failures: self.max_failures.unwrap_or(1),
                    interval: ms(interval),
                    delay: ms(self.delay_ms.unwrap_or(1_000)),
                })
            }
            RestartStrategy::Fixed => {
                for (name, set) in [
                    ("initial_delay_ms", self.initial_delay_ms.is_some()),
                    ("max_delay_ms", self.max_delay_ms.is_some()),
                    ("multiplier", self.multiplier.is_some()),
                    ("jitter", self.jitter.is_some()),
                    ("reset_after_ms", self.reset_after_ms.is_some()),
                    ("max_failures", self.max_failures.is_some()),
                    ("interval_ms", self.interval_ms.is_some()),
                ] {
                    given(name, set)?;
                }
                // A spec without `strategy` keeps its old default delay.
                let default_delay = if self.strategy.is_none() { 100 } else { 1_000 };
                Ok(Strategy::Fixed {
                    attempts: self.attempts.unwrap_or(3),
                    delay: ms(self.delay_ms.unwrap_or(default_delay)),
                    window: self.window_ms.map(ms),
                })
            }
        }
    }
}

/// The longest back-off of repeated platform failures under `failure_rate` and `fixed`.
pub const PLATFORM_MAX_DELAY: Duration = Duration::from_secs(60);

/// An attempt that runs this long resets that back-off.
pub const PLATFORM_RESET_AFTER: Duration = Duration::from_secs(600);

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Restart after this delay.
    Restart(Duration),
    /// The strategy allows no more restarts: the job fails, saying why.
    GiveUp,
}

/// A job's restarts so far under its strategy. Times are passed in (milliseconds on any
/// monotonic clock), so the sequence is a function of the failures' times alone; the jitter
/// comes from a generator seeded per job.
#[derive(Debug, Clone)]
pub struct RestartTracker {
    strategy: Strategy,
    /// Restarts that counted (since the last reset, for `exponential`).
    counted: u32,
    /// `exponential`: the next delay before jitter. `failure_rate`, `fixed`: the next delay
    /// after a platform failure, which doubles from `delay` up to [`PLATFORM_MAX_DELAY`].
    next_delay: Duration,
    /// `failure_rate`, `fixed` with a window: the times of the failures that counted.
    failures: VecDeque<u64>,
    /// SplitMix64 state for the jitter.
    rng: u64,
}

impl RestartTracker {
    /// A tracker for `strategy`, its jitter drawn from `seed`.
    pub fn new(strategy: Strategy, seed: u64) -> Self {
        let next_delay = match strategy {
            Strategy::Exponential { initial, .. } => initial,
            Strategy::FailureRate { delay, .. } | Strategy::Fixed { delay, .. } => delay,
        };
        RestartTracker { strategy, counted: 0, next_delay, failures: VecDeque::new(), rng: seed }
    }

    /// Restarts that counted so far (since the last reset, for `exponential`).
    pub fn counted(&self) -> u32 {
        self.counted
    }

    /// The delay the next counted failure would wait, before jitter.
    pub fn next_delay(&self) -> Duration {
        self.next_delay
    }

    /// A failure at `now_ms` of an attempt that started at `started_ms`; `counts` is false
    /// for the platform's own failures, which restart (after the current delay, which grows
    /// as for any failure) but use up nothing.
    pub fn failed(&mut self, now_ms: u64, started_ms: u64, counts: bool) -> Decision {
        match self.strategy {
            Strategy::Exponential { initial, max, multiplier, jitter, reset_after, attempts } => {
                if now_ms.saturating_sub(started_ms) >= reset_after.as_millis() as u64 {
                    self.counted = 0;
                    self.next_delay = initial;
                }
                let base = self.next_delay;
                if counts {
                    if attempts.is_some_and(|a| self.counted >= a) {
                        return Decision::GiveUp;
                    }
                    self.counted += 1;
                }
                // The delay grows for every failure, counted or not: a platform that keeps
                // failing is not hammered either.
                self.next_delay = base.mul_f64(multiplier).min(max);
                Decision::Restart(self.jittered(base, jitter))
            }
            Strategy::FailureRate { max_failures, interval, delay } => {
                if !counts {
                    return Decision::Restart(self.platform_delay(now_ms, started_ms, delay));
                }
                forget_before(&mut self.failures, now_ms, interval);
                self.failures.push_back(now_ms);
                if self.failures.len() > max_failures as usize {
                    return Decision::GiveUp;
                }
                self.counted += 1;
                Decision::Restart(delay)
            }
            Strategy::Fixed { attempts, delay, window } => {
                if !counts {
                    return Decision::Restart(self.platform_delay(now_ms, started_ms, delay));
                }
                if let Some(window) = window {
                    forget_before(&mut self.failures, now_ms, window);
                    self.failures.push_back(now_ms);
                    if self.failures.len() > attempts as usize {
                        return Decision::GiveUp;
                    }
                } else if self.counted >= attempts {
                    return Decision::GiveUp;
                }
                self.counted += 1;
                Decision::Restart(delay)
            }
        }
    }

    /// The delay before restarting after a platform failure under `failure_rate` or `fixed`:
    /// it uses up nothing, so it backs off instead (`delay` doubling up to
    /// [`PLATFORM_MAX_DELAY`], from `delay` again after an attempt that ran
    /// [`PLATFORM_RESET_AFTER`]). A failure a tenant can repeat at will (a Weir bug its job
    /// hits every time) then costs one restart a minute, not one per `delay_ms`.
    fn platform_delay(&mut self, now_ms: u64, started_ms: u64, delay: Duration) -> Duration {
        if now_ms.saturating_sub(started_ms) >= PLATFORM_RESET_AFTER.as_millis() as u64 {
            self.next_delay = delay;
        }
        let current = self.next_delay;
        self.next_delay = current.saturating_mul(2).min(PLATFORM_MAX_DELAY.max(delay));
        current
    }

    /// `base` spread uniformly by ± `jitter` of it.
    fn jittered(&mut self, base: Duration, jitter: f64) -> Duration {
        if jitter == 0.0 {
            return base;
        }
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        base.mul_f64((1.0 + jitter * (2.0 * unit - 1.0)).max(0.0))
    }
}

/// Drops the failures of `failures` (times, oldest first) at or before `now_ms - span`:
/// those left are within the last `span`.
fn forget_before(failures: &mut VecDeque<u64>, now_ms: u64, span: Duration) {
    let Some(since) = now_ms.checked_sub(span.as_millis() as u64) else { return };
    while failures.front().is_some_and(|&t| t <= since) {
        failures.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> RestartSettings {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_spec_without_a_strategy_keeps_its_old_meaning_and_none_means_exponential() {
        let old = parse(r#"{ "attempts": 2, "delay_ms": 50 }"#);
        assert_eq!(
            old.resolve().unwrap(),
            Strategy::Fixed { attempts: 2, delay: Duration::from_millis(50), window: None }
        );
        let only_attempts = parse(r#"{ "attempts": 0 }"#).resolve().unwrap();
        assert_eq!(
            only_attempts,
            Strategy::Fixed { attempts: 0, delay: Duration::from_millis(100), window: None }
        );
        match parse("{}").resolve().unwrap() {
            Strategy::Exponential { initial, max, multiplier, jitter, reset_after, attempts } => {
                assert_eq!((initial, max), (Duration::from_secs(1), Duration::from_secs(60)));
                assert_eq!((multiplier, jitter, attempts), (1.5, 0.1, None));
                assert_eq!(reset_after, Duration::from_secs(3600));
            }
            other => panic!("{other:?}"),
        }
        // Without `strategy`, a strategy's own parameters name it.
        assert_eq!(
            parse(r#"{ "initial_delay_ms": 100, "attempts": 3 }"#).kind(),
            RestartStrategy::Exponential
        );
        assert_eq!(parse(r#"{ "max_failures": 2, "delay_ms": 10 }"#).kind(), RestartStrategy::FailureRate);
        assert_eq!(parse(r#"{ "window_ms": 10 }"#).kind(), RestartStrategy::Fixed);
        // Written back, a spec says what it meant.
        assert_eq!(serde_json::to_string(&old).unwrap(), r#"{"attempts":2,"delay_ms":50}"#);
    }

    #[test]
    fn parameters_of_another_strategy_and_bad_values_are_refused() {
        let e = parse(r#"{ "strategy": "exponential", "delay_ms": 5 }"#).resolve().unwrap_err();
        assert_eq!(e, "settings.restart.delay_ms is not a parameter of the `exponential` strategy");
        let e = parse(r#"{ "strategy": "fixed", "multiplier": 2 }"#).resolve().unwrap_err();
        assert_eq!(e, "settings.restart.multiplier is not a parameter of the `fixed` strategy");
        let e = parse(r#"{ "strategy": "failure_rate", "attempts": 2 }"#).resolve().unwrap_err();
        assert!(e.contains("`failure_rate`"), "{e}");
        for (json, says) in [
            (r#"{ "strategy": "exponential", "multiplier": 0.5 }"#, "multiplier must be from 1 to 100"),
            (r#"{ "strategy": "exponential", "jitter": 1.5 }"#, "jitter must be from 0 to 1"),
            (
                r#"{ "initial_delay_ms": 10, "max_delay_ms": 5 }"#,
                "max_delay_ms (5) is below initial_delay_ms (10)",
            ),
            (r#"{ "strategy": "failure_rate", "interval_ms": 0 }"#, "interval_ms must be above 0"),
        ] {
            let e = parse(json).resolve().unwrap_err();
            assert!(e.contains(says), "{json}: {e}");
        }
        assert!(serde_json::from_str::<RestartSettings>(r#"{ "strategy": "sometimes" }"#).is_err());
        assert!(serde_json::from_str::<RestartSettings>(r#"{ "atempts": 1 }"#).is_err());
    }

    fn delays(tracker: &mut RestartTracker, failures: &[(u64, u64, bool)]) -> Vec<Option<u64>> {
        failures
            .iter()
            .map(|&(now, started, counts)| match tracker.failed(now, started, counts) {
                Decision::Restart(d) => Some(d.as_millis() as u64),
                Decision::GiveUp => None,
            })
            .collect()
    }

    #[test]
    fn exponential_delays_grow_to_the_max_and_a_stable_attempt_resets_them() {
        let strategy = parse(
            r#"{ "initial_delay_ms": 100, "max_delay_ms": 1000, "multiplier": 2, "jitter": 0,
                                   "reset_after_ms": 10000 }"#,
        )
        .resolve()
        .unwrap();
        let mut t = RestartTracker::new(strategy, 7);
        // Quick failures: 100, 200, 400, 800, then the max.
        let quick: Vec<_> = (0..6).map(|i| (i * 10 + 5, i * 10, true)).collect();
        assert_eq!(delays(&mut t, &quick), [100, 200, 400, 800, 1000, 1000].map(Some));
        assert_eq!(t.counted(), 6);
        // A platform failure restarts after the current delay but does not count.
        assert_eq!(delays(&mut t, &[(100, 90, false)]), [Some(1000)]);
        assert_eq!(t.counted(), 6);
        // An attempt that ran 10 s resets the delay and the count.
        assert_eq!(delays(&mut t, &[(20_000, 10_000, true), (20_100, 20_050, true)]), [Some(100), Some(200)]);
        assert_eq!(t.counted(), 2);
    }

    #[test]
    fn exponential_jitter_stays_within_its_share_and_attempts_bound_the_restarts() {
        let strategy =
            parse(r#"{ "initial_delay_ms": 1000, "max_delay_ms": 1000, "jitter": 0.25, "attempts": 50 }"#)
                .resolve()
                .unwrap();
        let mut t = RestartTracker::new(strategy, 42);
        let got = delays(&mut t, &(0..51).map(|i| (i + 1, i, true)).collect::<Vec<_>>());
        let restarts: Vec<u64> = got[..50].iter().map(|d| d.unwrap()).collect();
        assert!(restarts.iter().all(|d| (750..=1250).contains(d)), "{restarts:?}");
        assert!(
            restarts.iter().any(|d| *d < 950) && restarts.iter().any(|d| *d > 1050),
            "spread: {restarts:?}"
        );
        assert_eq!(got[50], None, "the 51st failure gives up");
        // The same seed gives the same delays.
        let mut again = RestartTracker::new(strategy, 42);
        assert_eq!(delays(&mut again, &(0..51).map(|i| (i + 1, i, true)).collect::<Vec<_>>()), got);
    }

    #[test]
    fn failure_rate_counts_failures_within_the_interval() {
        let strategy = parse(
            r#"{ "strategy": "failure_rate", "max_failures": 2, "interval_ms": 1000, "delay_ms": 10 }"#,
        )
        .resolve()
        .unwrap();
        let mut t = RestartTracker::new(strategy, 0);
        // Two failures within a second restart; a third within the same second gives up.
        assert_eq!(delays(&mut t, &[(0, 0, true), (400, 10, true)]), [Some(10), Some(10)]);
        let mut spread = t.clone();
        assert_eq!(delays(&mut t, &[(900, 410, true)]), [None]);
        // Spread out, they never pass the rate; platform failures are not counted at all.
        assert_eq!(
            delays(
                &mut spread,
                &[(1001, 410, true), (1300, 1010, false), (1401, 1310, true), (2500, 1410, true)]
            ),
            [Some(10), Some(10), Some(10), Some(10)]
        );
    }

    #[test]
    fn platform_failures_back_off_under_fixed_and_failure_rate_without_counting() {
        for settings in [
            RestartSettings::fixed(0, 100),
            parse(r#"{ "strategy": "failure_rate", "max_failures": 0, "delay_ms": 100 }"#),
        ] {
            let mut t = RestartTracker::new(settings.resolve().unwrap(), 0);
            let quick: Vec<_> = (0..12).map(|i| (i * 10 + 5, i * 10, false)).collect();
            let got = delays(&mut t, &quick);
            assert_eq!(got[..5], [100, 200, 400, 800, 1600].map(Some), "{settings:?}");
            assert_eq!(got[11], Some(60_000), "capped: {got:?}");
            assert_eq!(t.counted(), 0);
            // An attempt that ran ten minutes starts the back-off afresh; a counted failure
            // still gives up at once (no attempts allowed).
            assert_eq!(
                delays(&mut t, &[(700_000, 100_000, false), (700_010, 700_005, true)]),
                [Some(100), None]
            );
        }
    }

    #[test]
    fn fixed_counts_every_failure_or_those_within_its_window() {
        let mut t = RestartTracker::new(RestartSettings::fixed(2, 5).resolve().unwrap(), 0);
        assert_eq!(
            delays(&mut t, &[(0, 0, true), (10, 1, false), (20, 11, true), (30, 21, true)]),
            [Some(5), Some(5), Some(5), None]
        );
        let windowed = parse(r#"{ "strategy": "fixed", "attempts": 1, "window_ms": 100, "delay_ms": 5 }"#);
        let mut t = RestartTracker::new(windowed.resolve().unwrap(), 0);
        assert_eq!(
            delays(&mut t, &[(0, 0, true), (150, 5, true), (200, 155, true)]),
            [Some(5), Some(5), None]
        );
    }
}
