//! Watermark tracking over several input channels: a task's watermark is the minimum of
//! its active channels' watermarks. A channel that ended no longer holds it back; neither
//! does an idle one (its upstream has no input right now, Flink's `WatermarkStatus.IDLE`)
//! until it delivers a batch or a watermark again.
//!
//! Invariants: the combined watermark never decreases (a channel that comes back active
//! below it does not lower it — its records may then be late); when every channel is idle
//! it moves up to the highest of their watermarks (Flink's `StatusWatermarkValve`), so the
//! result does not depend on the order in which the inputs went idle.

/// Per-channel watermarks, idle flags and their combined watermark.
#[derive(Debug, Clone)]
pub struct WatermarkTracker {
    channels: Vec<i64>,
    idle: Vec<bool>,
    current: i64,
}

impl WatermarkTracker {
    /// A tracker over `channels` inputs, all active at `i64::MIN`.
    pub fn new(channels: usize) -> Self {
        WatermarkTracker {
            channels: vec![i64::MIN; channels],
            idle: vec![false; channels],
            current: i64::MIN,
        }
    }

    /// A tracker restored from its channels' watermarks (as [`Self::channels`] gave them),
    /// every channel active; `None` when there are none.
    pub fn restore(channels: &[i64]) -> Option<Self> {
        let current = channels.iter().copied().min()?;
        Some(WatermarkTracker { channels: channels.to_vec(), idle: vec![false; channels.len()], current })
    }

    /// The watermark of every channel.
    pub fn channels(&self) -> &[i64] {
        &self.channels
    }

    /// The combined watermark.
    pub fn current(&self) -> i64 {
        self.current
    }

    /// Whether channel `channel` is idle.
    pub fn is_idle(&self, channel: usize) -> bool {
        self.idle[channel]
    }

    /// True when at least one channel is idle and every other one is idle or at the end of
    /// event time (`i64::MAX`, ended): nothing can advance the combined watermark, and the
    /// task is idle itself.
    pub fn all_idle(&self) -> bool {
        self.idle.iter().any(|i| *i)
            && self.idle.iter().zip(&self.channels).all(|(i, w)| *i || *w == i64::MAX)
    }

    /// Channel `channel` reached `watermark` (and is active); returns the new combined
    /// watermark if it advanced. A watermark lower than the channel's previous one is
    /// ignored, but still makes the channel active.
    pub fn update(&mut self, channel: usize, watermark: i64) -> Option<i64> {
        let was_idle = std::mem::replace(&mut self.idle[channel], false);
        let w = &mut self.channels[channel];
        if watermark <= *w && !was_idle {
            return None;
        }
        *w = (*w).max(watermark);
        self.recompute()
    }

    /// Channel `channel` delivered records: it is active again.
    pub fn activate(&mut self, channel: usize) -> Option<i64> {
        if !self.idle[channel] {
            return None;
        }
        self.idle[channel] = false;
        self.recompute()
    }

    /// Channel `channel` went idle: it no longer holds the combined watermark back. Returns
    /// the new combined watermark if it advanced.
    pub fn set_idle(&mut self, channel: usize) -> Option<i64> {
        if self.idle[channel] {
            return None;
        }
        self.idle[channel] = true;
        self.recompute()
    }

    /// Channel `channel` ended: it is active at `i64::MAX` from now on.
    pub fn end(&mut self, channel: usize) -> Option<i64> {
        self.update(channel, i64::MAX)
    }

    /// Raises `inputs[p]` to the watermark of input port `p`, for every port: the smallest
    /// over the port's active channels (the highest of them when all are idle), where
    /// `ports[c]` is channel `c`'s port. Raising, never lowering, keeps each port's view
    /// monotonic as the combined one is.
    pub fn raise_inputs(&self, ports: &[u32], inputs: &mut [i64]) {
        for (p, view) in inputs.iter_mut().enumerate() {
            let channels =
                || ports.iter().enumerate().filter(move |(_, port)| **port as usize == p).map(|(c, _)| c);
            let active = channels().filter(|c| !self.idle[*c]).map(|c| self.channels[c]).min();
            let w = active.or_else(|| channels().map(|c| self.channels[c]).max()).unwrap_or(i64::MIN);
            *view = (*view).max(w);
        }
    }

    fn recompute(&mut self) -> Option<i64> {
        let active = self.channels.iter().zip(&self.idle).filter(|(_, idle)| !**idle);
        let min = match active.map(|(w, _)| *w).min() {
            Some(min) => min,
            // Every channel idle: up to the highest of them.
            None => self.channels.iter().copied().max()?,
        };
        if min > self.current {
            self.current = min;
            Some(min)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    #[test]
    fn each_input_has_its_own_monotonic_view() {
        // Channels 0 and 1 feed input 0, channel 2 feeds input 1.
        let ports = [0, 0, 1];
        let mut t = WatermarkTracker::new(3);
        let mut inputs = [i64::MIN; 2];
        t.update(0, 10);
        t.update(2, 50);
        t.raise_inputs(&ports, &mut inputs);
        assert_eq!(inputs, [i64::MIN, 50]);
        t.update(1, 20);
        t.raise_inputs(&ports, &mut inputs);
        assert_eq!(inputs, [10, 50]);
        assert_eq!(t.current(), 10);
        // An idle channel no longer holds its input back; all idle: the highest.
        t.set_idle(0);
        t.raise_inputs(&ports, &mut inputs);
        assert_eq!(inputs, [20, 50]);
        t.set_idle(1);
        t.set_idle(2);
        t.raise_inputs(&ports, &mut inputs);
        assert_eq!(inputs, [20, 50]);
        // Active again below its view: the view does not go back.
        t.update(0, 15);
        t.raise_inputs(&ports, &mut inputs);
        assert_eq!(inputs, [20, 50]);
    }

    #[test]
    fn minimum_over_channels() {
        let mut t = WatermarkTracker::new(2);
        assert_eq!(t.update(0, 10), None);
        assert_eq!(t.update(1, 5), Some(5));
        assert_eq!(t.update(1, 3), None);
        assert_eq!(t.update(1, 20), Some(10));
        assert_eq!(t.end(0), Some(20));
        assert_eq!(t.end(1), Some(i64::MAX));
        assert_eq!(t.current(), i64::MAX);
    }

    #[test]
    fn an_idle_channel_does_not_hold_the_watermark_back() {
        let mut t = WatermarkTracker::new(3);
        assert_eq!(t.update(0, 100), None);
        assert_eq!(t.update(1, 50), None);
        // Channel 2 never sent anything; once idle, the others decide.
        assert_eq!(t.set_idle(2), Some(50));
        assert!(!t.all_idle());
        assert_eq!(t.update(1, 200), Some(100));
        // Back active below the combined watermark: it does not lower it, and holds the
        // next advance back until it catches up.
        assert_eq!(t.update(2, 10), None);
        assert_eq!(t.current(), 100);
        assert_eq!(t.update(0, 300), None);
        assert_eq!(t.update(2, 250), Some(200));
    }

    #[test]
    fn all_idle_moves_to_the_highest_idle_watermark() {
        let mut t = WatermarkTracker::new(2);
        assert_eq!(t.update(0, 7), None);
        assert_eq!(t.set_idle(0), None);
        assert!(!t.all_idle());
        assert_eq!(t.set_idle(1), Some(7), "every channel idle: the highest of them");
        assert!(t.all_idle());
        assert_eq!(t.current(), 7);
        // Either order of going idle gives the same.
        let mut u = WatermarkTracker::new(2);
        assert_eq!(u.update(0, 7), None);
        assert_eq!(u.set_idle(1), Some(7));
        assert_eq!(u.set_idle(0), None);
        assert_eq!(u.current(), 7);
        // A batch makes a channel active again: only it counts (channel 0 is still idle).
        assert_eq!(t.activate(1), None);
        assert!(!t.all_idle());
        assert_eq!(t.update(1, 9), Some(9));
        // Channel 0 back at 7 does not lower it.
        assert_eq!(t.update(0, 7), None);
        assert_eq!(t.current(), 9);
    }

    #[test]
    fn an_ended_channel_and_idle_ones_make_the_task_idle() {
        let mut t = WatermarkTracker::new(2);
        assert_eq!(t.end(0), None);
        assert_eq!(t.set_idle(1), Some(i64::MAX));
        assert!(t.all_idle());
        let restored = WatermarkTracker::restore(&[5, 9]).unwrap();
        assert!(!restored.is_idle(0) && !restored.is_idle(1), "a restored tracker starts active");
        assert_eq!(restored.current(), 5);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Watermark(usize, i64),
        Batch(usize),
        Idle(usize),
        End(usize),
    }

    fn op(channels: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..channels, -50i64..200).prop_map(|(c, w)| Op::Watermark(c, w)),
            2 => (0..channels).prop_map(Op::Batch),
            2 => (0..channels).prop_map(Op::Idle),
            1 => (0..channels).prop_map(Op::End),
        ]
    }

    proptest! {
        /// Against a model: the combined watermark never decreases, idle channels never hold
        /// it back (it is at least the minimum over active channels), and while every channel
        /// is idle it does not move.
        #[test]
        fn combined_watermark_is_monotone_and_ignores_idle_channels(
            ops in (1usize..5).prop_flat_map(|n| (Just(n), proptest::collection::vec(op(n), 0..60)))
        ) {
            let (n, ops) = ops;
            let mut t = WatermarkTracker::new(n);
            let mut model = vec![i64::MIN; n];
            let mut idle = vec![false; n];
            for o in ops {
                let before = t.current();
                let reported = match o {
                    Op::Watermark(c, w) => { model[c] = model[c].max(w); idle[c] = false; t.update(c, w) }
                    Op::Batch(c) => { idle[c] = false; t.activate(c) }
                    Op::Idle(c) => { idle[c] = true; t.set_idle(c) }
                    Op::End(c) => { model[c] = i64::MAX; idle[c] = false; t.end(c) }
                };
                let after = t.current();
                prop_assert!(after >= before, "the combined watermark went back: {before} -> {after}");
                prop_assert_eq!(reported.is_some(), after > before);
                if let Some(w) = reported {
                    prop_assert_eq!(w, after);
                }
                prop_assert_eq!(t.channels(), &model[..]);
                let active_min = model.iter().zip(&idle).filter(|(_, i)| !**i).map(|(w, _)| *w).min();
                match active_min {
                    // Never held back by an idle channel: at least the active minimum.
                    Some(m) => prop_assert!(after >= m, "held back: {after} < active minimum {m}"),
                    // Every channel idle: the highest of them (never backwards).
                    None => prop_assert_eq!(after, before.max(*model.iter().max().unwrap())),
                }
                for (c, i) in idle.iter().enumerate() {
                    prop_assert_eq!(t.is_idle(c), *i);
                }
            }
        }
    }
}
