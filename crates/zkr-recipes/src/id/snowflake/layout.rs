//! The bit layout of snowflake IDs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::id::IdError;

/// How a snowflake ID's 63 bits are split: `timestamp | worker ID | sequence`, most
/// significant first, with the sign bit always zero so IDs fit an `i64` too.
///
/// The default is Twitter's: 41 bits of milliseconds since an epoch (69 years), 10 bits of
/// worker ID (1024 workers), 12 bits of sequence (4096 IDs per millisecond per worker). The
/// default epoch is 2024-01-01T00:00:00Z.
///
/// # Examples
///
/// ```
/// use zkr_recipes::id::SnowflakeLayout;
///
/// let layout = SnowflakeLayout::default();
/// let id = layout.compose(layout.epoch_ms() + 1000, 5, 7).unwrap();
/// let parts = layout.decompose(id);
/// assert_eq!((parts.timestamp_ms, parts.worker_id, parts.sequence), (layout.epoch_ms() + 1000, 5, 7));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnowflakeLayout {
    epoch_ms: u64,
    time_bits: u32,
    worker_bits: u32,
    sequence_bits: u32,
}

/// An ID taken apart by [`SnowflakeLayout::decompose`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnowflakeParts {
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// The worker that issued it.
    pub worker_id: u64,
    /// The sequence within that millisecond.
    pub sequence: u64,
}

/// 2024-01-01T00:00:00Z in milliseconds since the Unix epoch.
pub const DEFAULT_EPOCH_MS: u64 = 1_704_067_200_000;

impl Default for SnowflakeLayout {
    fn default() -> Self {
        SnowflakeLayout { epoch_ms: DEFAULT_EPOCH_MS, time_bits: 41, worker_bits: 10, sequence_bits: 12 }
    }
}

impl SnowflakeLayout {
    /// A layout with these bit widths (summing to at most 63) and epoch.
    ///
    /// # Errors
    /// [`IdError::InvalidArgument`] if the widths sum to more than 63, or any is zero, or the
    /// epoch is before 1970.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use zkr_recipes::id::SnowflakeLayout;
    ///
    /// // Sonyflake-like: fewer sequence bits, more workers.
    /// let layout = SnowflakeLayout::new(UNIX_EPOCH + Duration::from_secs(1_700_000_000), 41, 16, 6).unwrap();
    /// assert_eq!(layout.max_worker_id(), 65535);
    /// assert!(SnowflakeLayout::new(UNIX_EPOCH, 41, 12, 12).is_err());
    /// ```
    pub fn new(
        epoch: SystemTime,
        time_bits: u32,
        worker_bits: u32,
        sequence_bits: u32,
    ) -> Result<Self, IdError> {
        let epoch_ms = epoch
            .duration_since(UNIX_EPOCH)
            .map_err(|_| IdError::InvalidArgument("the epoch is before 1970".into()))?
            .as_millis();
        let epoch_ms =
            u64::try_from(epoch_ms).map_err(|_| IdError::InvalidArgument("epoch out of range".into()))?;
        // Checked: widths near u32::MAX must be refused, not overflow.
        let total = time_bits.checked_add(worker_bits).and_then(|t| t.checked_add(sequence_bits));
        if time_bits == 0 || worker_bits == 0 || sequence_bits == 0 || total.is_none_or(|t| t > 63) {
            return Err(IdError::InvalidArgument(format!(
                "bit widths {time_bits}+{worker_bits}+{sequence_bits} must be positive and sum to at most 63"
            )));
        }
        Ok(SnowflakeLayout { epoch_ms, time_bits, worker_bits, sequence_bits })
    }

    /// The epoch, in milliseconds since the Unix epoch.
    pub fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// The largest worker ID (`2^worker_bits - 1`).
    pub fn max_worker_id(&self) -> u64 {
        (1 << self.worker_bits) - 1
    }

    /// The largest sequence within one millisecond (`2^sequence_bits - 1`).
    pub fn max_sequence(&self) -> u64 {
        (1 << self.sequence_bits) - 1
    }

    /// The largest timestamp offset from the epoch, in milliseconds.
    pub fn max_offset_ms(&self) -> u64 {
        (1 << self.time_bits) - 1
    }

    /// The last moment this layout can represent.
    pub fn end_of_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.epoch_ms + self.max_offset_ms())
    }

    /// The ID for a timestamp (Unix milliseconds), worker and sequence; `None` when a part
    /// does not fit its bits or the timestamp is before the epoch.
    pub fn compose(&self, timestamp_ms: u64, worker_id: u64, sequence: u64) -> Option<u64> {
        let offset = timestamp_ms.checked_sub(self.epoch_ms)?;
        self.compose_offset(offset, worker_id, sequence)
    }

    pub(crate) fn compose_offset(&self, offset: u64, worker_id: u64, sequence: u64) -> Option<u64> {
        if offset > self.max_offset_ms() || worker_id > self.max_worker_id() || sequence > self.max_sequence()
        {
            return None;
        }
        Some(
            (offset << (self.worker_bits + self.sequence_bits))
                | (worker_id << self.sequence_bits)
                | sequence,
        )
    }

    /// Takes an ID apart.
    pub fn decompose(&self, id: u64) -> SnowflakeParts {
        SnowflakeParts {
            timestamp_ms: self.epoch_ms + (id >> (self.worker_bits + self.sequence_bits)),
            worker_id: (id >> self.sequence_bits) & self.max_worker_id(),
            sequence: id & self.max_sequence(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn twitter_layout_bounds() {
        let l = SnowflakeLayout::default();
        assert_eq!(l.max_worker_id(), 1023);
        assert_eq!(l.max_sequence(), 4095);
        let max = l.compose_offset(l.max_offset_ms(), 1023, 4095).unwrap();
        assert_eq!(max, i64::MAX as u64);
        assert_eq!(l.compose_offset(l.max_offset_ms() + 1, 0, 0), None);
        assert_eq!(l.compose(l.epoch_ms() - 1, 0, 0), None);
        assert_eq!(l.compose(l.epoch_ms(), 1024, 0), None);
        assert_eq!(l.compose(l.epoch_ms(), 0, 4096), None);
        // 2^41 ms is about 69.7 years.
        let years = Duration::from_millis(l.max_offset_ms()).as_secs() / (365 * 24 * 3600);
        assert_eq!(years, 69);
    }

    fn layouts() -> impl Strategy<Value = SnowflakeLayout> {
        (1u32..40, 1u32..16, 1u32..16).prop_filter_map("fits 63 bits", |(t, w, s)| {
            SnowflakeLayout::new(UNIX_EPOCH + Duration::from_millis(DEFAULT_EPOCH_MS), t, w, s).ok()
        })
    }

    proptest! {
        #[test]
        fn any_widths_are_accepted_or_refused_without_panic(t in any::<u32>(), w in any::<u32>(), s in any::<u32>()) {
            let layout = SnowflakeLayout::new(UNIX_EPOCH, t, w, s);
            let fits = t > 0 && w > 0 && s > 0 && u64::from(t) + u64::from(w) + u64::from(s) <= 63;
            prop_assert_eq!(layout.is_ok(), fits);
        }

        #[test]
        fn compose_round_trips(layout in layouts(), offset in any::<u64>(), worker in any::<u64>(), seq in any::<u64>()) {
            let offset = offset & layout.max_offset_ms();
            let worker = worker & layout.max_worker_id();
            let seq = seq & layout.max_sequence();
            let id = layout.compose_offset(offset, worker, seq).unwrap();
            prop_assert!(id <= i64::MAX as u64);
            let parts = layout.decompose(id);
            prop_assert_eq!((parts.timestamp_ms - layout.epoch_ms(), parts.worker_id, parts.sequence), (offset, worker, seq));
        }

        /// IDs order by time first, then worker, then sequence.
        #[test]
        fn ids_order_by_time_worker_sequence(a in (0u64..1 << 41, 0u64..1024, 0u64..4096), b in (0u64..1 << 41, 0u64..1024, 0u64..4096)) {
            let l = SnowflakeLayout::default();
            let ia = l.compose_offset(a.0, a.1, a.2).unwrap();
            let ib = l.compose_offset(b.0, b.1, b.2).unwrap();
            prop_assert_eq!(ia.cmp(&ib), a.cmp(&b));
        }
    }
}
