//! Watermark tracking over several input channels: a task's watermark is the minimum of
//! its channels' watermarks; a channel that ended no longer holds it back.

/// Per-channel watermarks and their minimum.
#[derive(Debug, Clone)]
pub struct WatermarkTracker {
    channels: Vec<i64>,
    current: i64,
}

impl WatermarkTracker {
    /// A tracker over `channels` inputs, all at `i64::MIN`.
    pub fn new(channels: usize) -> Self {
        WatermarkTracker { channels: vec![i64::MIN; channels], current: i64::MIN }
    }

    /// A tracker restored from its channels' watermarks (as [`Self::channels`] gave them);
    /// `None` when there are none.
    pub fn restore(channels: &[i64]) -> Option<Self> {
        let current = channels.iter().copied().min()?;
        Some(WatermarkTracker { channels: channels.to_vec(), current })
    }

    /// The watermark of every channel.
    pub fn channels(&self) -> &[i64] {
        &self.channels
    }

    /// The combined watermark.
    pub fn current(&self) -> i64 {
        self.current
    }

    /// Channel `channel` reached `watermark`; returns the new combined watermark if it
    /// advanced. A watermark lower than the channel's previous one is ignored.
    pub fn update(&mut self, channel: usize, watermark: i64) -> Option<i64> {
        let w = &mut self.channels[channel];
        if watermark <= *w {
            return None;
        }
        *w = watermark;
        self.recompute()
    }

    /// Channel `channel` ended: it is at `i64::MAX` from now on.
    pub fn end(&mut self, channel: usize) -> Option<i64> {
        self.update(channel, i64::MAX)
    }

    fn recompute(&mut self) -> Option<i64> {
        let min = self.channels.iter().copied().min().unwrap_or(i64::MAX);
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
}
