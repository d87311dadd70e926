//! How counters are stored: Apache Curator's formats, the one home of them in zkr.
//!
//! A long (`DistributedAtomicLong`) is 8 bytes big-endian (`ByteBuffer.putLong`), an integer
//! (`DistributedAtomicInteger`, `SharedCount`) 4 bytes big-endian. Curator's atomic values
//! read a node without data as 0; `SharedCount` needs its 4 bytes.

/// A node's data that is not a counter of the expected width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WrongLength {
    /// The data found.
    pub(crate) data: Vec<u8>,
    /// The width expected, in bytes.
    pub(crate) expected: usize,
}

/// A number a counter holds: `i32` (4 bytes) or `i64` (8 bytes), big-endian. Sealed.
///
/// # Examples
///
/// ```
/// use zkr_recipes::counters::CounterValue;
///
/// assert_eq!(7i64.to_bytes(), vec![0, 0, 0, 0, 0, 0, 0, 7]);
/// assert_eq!(<i32 as CounterValue>::WIDTH, 4);
/// ```
pub trait CounterValue:
    sealed::Sealed + Copy + Eq + Default + std::fmt::Debug + std::fmt::Display + Send + Sync + 'static
{
    /// How many bytes the value takes in the node.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::counters::CounterValue;
    /// assert_eq!(<i64 as CounterValue>::WIDTH, 8);
    /// ```
    const WIDTH: usize;

    /// The node data for `self`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::counters::CounterValue;
    /// assert_eq!((-1i32).to_bytes(), vec![0xff; 4]);
    /// ```
    fn to_bytes(self) -> Vec<u8>;

    /// `self + delta`, or `None` when it overflows.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::counters::CounterValue;
    /// assert_eq!(CounterValue::checked_add(i32::MAX, 1), None);
    /// ```
    fn checked_add(self, delta: Self) -> Option<Self>;

    /// `self - delta`, or `None` when it overflows.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::counters::CounterValue;
    /// assert_eq!(CounterValue::checked_sub(5i64, 7), Some(-2));
    /// ```
    fn checked_sub(self, delta: Self) -> Option<Self>;

    /// One, what `increment` adds.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::counters::CounterValue;
    /// assert_eq!(<i64 as CounterValue>::one(), 1);
    /// ```
    fn one() -> Self;

    #[doc(hidden)]
    fn from_exact(data: &[u8]) -> Option<Self>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

macro_rules! counter_value {
    ($t:ty, $width:expr) => {
        impl CounterValue for $t {
            const WIDTH: usize = $width;

            fn to_bytes(self) -> Vec<u8> {
                self.to_be_bytes().to_vec()
            }

            fn checked_add(self, delta: Self) -> Option<Self> {
                <$t>::checked_add(self, delta)
            }

            fn checked_sub(self, delta: Self) -> Option<Self> {
                <$t>::checked_sub(self, delta)
            }

            fn one() -> Self {
                1
            }

            fn from_exact(data: &[u8]) -> Option<Self> {
                data.try_into().ok().map(<$t>::from_be_bytes)
            }
        }
    };
}

counter_value!(i32, 4);
counter_value!(i64, 8);

/// A node's data as `T`, Curator's `DistributedAtomic*` way: no data reads as 0, anything
/// else must be exactly `T::WIDTH` bytes.
pub(crate) fn decode_or_zero<T: CounterValue>(data: &[u8]) -> Result<T, WrongLength> {
    if data.is_empty() {
        return Ok(T::default());
    }
    decode_exact(data)
}

/// A node's data as `T`, exactly `T::WIDTH` bytes (Curator's `SharedCount`).
pub(crate) fn decode_exact<T: CounterValue>(data: &[u8]) -> Result<T, WrongLength> {
    T::from_exact(data).ok_or_else(|| WrongLength { data: data.to_vec(), expected: T::WIDTH })
}

/// `DistributedAtomicLong`'s 8 bytes of `value`.
pub(crate) fn encode_long(value: i64) -> [u8; 8] {
    value.to_be_bytes()
}

/// The bytes as Curator prints them in its corruption message: `[0x66, 0x6f, 0x6f]`.
pub(crate) fn hex(data: &[u8]) -> String {
    let bytes: Vec<String> = data.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[{}]", bytes.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn formats_are_curators() {
        // ByteBuffer.putLong(1) and putInt(-2).
        assert_eq!(1i64.to_bytes(), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!((-2i32).to_bytes(), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(encode_long(258), [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(decode_or_zero::<i64>(&[]), Ok(0));
        assert_eq!(decode_or_zero::<i32>(&[]), Ok(0));
        assert!(decode_exact::<i32>(&[]).is_err(), "SharedCount needs its 4 bytes");
        assert_eq!(hex(b"foo"), "[0x66, 0x6f, 0x6f]");
    }

    #[test]
    fn a_value_of_the_wrong_width_is_refused() {
        let wrong = decode_or_zero::<i64>(b"foo").unwrap_err();
        assert_eq!(wrong, WrongLength { data: b"foo".to_vec(), expected: 8 });
        assert!(decode_or_zero::<i64>(&[0; 9]).is_err(), "Curator would read the first 8 of 9 bytes");
        assert!(decode_or_zero::<i32>(&[0; 8]).is_err(), "a long is not an integer");
    }

    #[test]
    fn arithmetic_is_checked() {
        assert_eq!(CounterValue::checked_add(i32::MAX, 1), None);
        assert_eq!(CounterValue::checked_sub(i64::MIN, 1), None);
        assert_eq!(CounterValue::checked_sub(-1i64, i64::MIN), Some(i64::MAX));
        assert_eq!(CounterValue::checked_add(2i64, -3), Some(-1));
    }

    proptest! {
        #[test]
        fn longs_round_trip(v in any::<i64>()) {
            prop_assert_eq!(decode_or_zero::<i64>(&v.to_bytes()), Ok(v));
            prop_assert_eq!(decode_exact::<i64>(&encode_long(v)), Ok(v));
        }

        #[test]
        fn integers_round_trip(v in any::<i32>()) {
            prop_assert_eq!(decode_exact::<i32>(&v.to_bytes()), Ok(v));
        }

        #[test]
        fn other_lengths_never_decode(data in proptest::collection::vec(any::<u8>(), 1..20)) {
            prop_assert_eq!(decode_or_zero::<i64>(&data).is_ok(), data.len() == 8);
            prop_assert_eq!(decode_exact::<i32>(&data).is_ok(), data.len() == 4);
        }
    }
}
