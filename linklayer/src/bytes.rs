//! Byte copies that link no panic, and a zero test that calls no `memcmp`.
//!
//! `<[u8]>::copy_from_slice` panics when the two lengths differ. Where they cannot differ the
//! check is still there, and an optimised image keeps it whenever the compiler moves the copy
//! out of line, shared by every caller (a firmware build at `opt-level = "z"` does): one such
//! copy anywhere puts a panic path in the image. [`copy_prefix`] has none.

/// Copies `src` to the front of `dst`, as many bytes as both hold; returns how many.
///
/// ```
/// let mut dst = [0u8; 4];
/// assert_eq!(linklayer::bytes::copy_prefix(&mut dst, &[1, 2, 3]), 3);
/// assert_eq!(dst, [1, 2, 3, 0]);
/// assert_eq!(linklayer::bytes::copy_prefix(&mut dst, &[9; 8]), 4);
/// assert_eq!(dst, [9; 4]);
/// ```
#[inline]
pub fn copy_prefix(dst: &mut [u8], src: &[u8]) -> usize {
    copy_words(dst, src)
}

/// [`copy_prefix`], always inlined: [`copy_array`] gives it constant lengths.
#[inline(always)]
fn copy_words(dst: &mut [u8], src: &[u8]) -> usize {
    let n = dst.len().min(src.len());
    // Eight bytes at a time, then the tail. At `opt-level = "z"` the compiler keeps the
    // loop as written: a byte loop cost a Cortex-M4 5 instructions a byte, `copy_from_slice` a
    // `memcpy` call (100 to 200 instructions for tens of bytes) and a panic path when moved out of
    // line. On an x86-64 host at opt-level 3 it is within 2 ns of `copy_from_slice` up to 640
    // bytes (5 against 3 ns for 64, 15 against 14 for 640), and faster at 4 KiB. The splits are
    // the checked ones, which cannot panic even where the compiler keeps them out of line.
    let whole = n - n % 8;
    let (Some((mut d, d_tail)), Some((mut s, s_tail))) = (
        dst.get_mut(..n).and_then(|d| d.split_at_mut_checked(whole)),
        src.get(..n).and_then(|s| s.split_at_checked(whole)),
    ) else {
        return 0;
    };
    while let (Some((dh, dt)), Some((sh, st))) =
        (core::mem::take(&mut d).split_first_chunk_mut::<8>(), s.split_first_chunk::<8>())
    {
        *dh = *sh;
        (d, s) = (dt, st);
    }
    // The tail: four bytes at once if it has them (the 12-byte rows of a UALink flit), then the
    // rest one at a time.
    let (d_tail, s_tail) = match (d_tail.split_first_chunk_mut::<4>(), s_tail.split_first_chunk::<4>()) {
        (Some((dh, dt)), Some((sh, st))) => {
            *dh = *sh;
            (dt, st)
        }
        _ => (d_tail, s_tail),
    };
    for (x, y) in d_tail.iter_mut().zip(s_tail) {
        *x = *y;
    }
    n
}

/// Copies one array over another of the same length, eight bytes at a time.
///
/// `*dst = *src` is the same copy, but at `opt-level = "z"` the compiler makes any array move
/// above a few words a `memcpy` call: a Cortex-M4 spent about 130 instructions on 16 bytes and
/// 140 on 32 that way. Always inlined, this is a few loads and stores where `N` is small (the
/// row and half-flit copies of a UALink DL flit), and the loop of [`copy_prefix`] where it is
/// not.
///
/// ```
/// let mut dst = [0u8; 12];
/// linklayer::bytes::copy_array(&mut dst, &[7; 12]);
/// assert_eq!(dst, [7; 12]);
/// ```
#[inline(always)]
pub fn copy_array<const N: usize>(dst: &mut [u8; N], src: &[u8; N]) {
    copy_words(dst, src);
}

/// Whether every byte of `bytes` is zero.
///
/// `bytes == [0; N]` is a `memcmp` call on a small core (a Cortex-M4 at `opt-level = "z"` spent
/// about 240 instructions on 32 bytes); this reads eight bytes at a time and stops at the first
/// word that is not zero.
///
/// ```
/// assert!(linklayer::bytes::is_zero(&[0; 13]));
/// assert!(!linklayer::bytes::is_zero(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
/// ```
#[inline]
pub fn is_zero(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        if u64::from_ne_bytes(*word) != 0 {
            return false;
        }
        rest = tail;
    }
    rest.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every byte of arrays of each length class (below 8, a multiple of 8, and neither).
    #[test]
    fn copy_array_copies_every_byte() {
        fn check<const N: usize>() {
            let src: [u8; N] = core::array::from_fn(|i| i as u8 + 1);
            let mut dst = [0u8; N];
            copy_array(&mut dst, &src);
            assert_eq!(dst, src, "{N} bytes");
        }
        check::<0>();
        check::<3>();
        check::<8>();
        check::<12>();
        check::<16>();
        check::<32>();
        check::<37>();
    }

    proptest! {
        /// The same bytes as `copy_from_slice` over the common length; the rest untouched.
        #[test]
        fn copies_the_common_prefix(src in proptest::collection::vec(any::<u8>(), 0..200), dst_len in 0usize..200) {
            let mut dst = std::vec![0xA5u8; dst_len];
            let n = copy_prefix(&mut dst, &src);
            prop_assert_eq!(n, dst_len.min(src.len()));
            prop_assert_eq!(&dst[..n], &src[..n]);
            prop_assert!(dst[n..].iter().all(|&b| b == 0xA5));
        }

        /// The same answer as comparing each byte with zero, one set byte anywhere or none.
        #[test]
        fn zero_is_every_byte_zero(len in 0usize..80, at in any::<usize>(), byte in any::<u8>()) {
            let mut bytes = std::vec![0u8; len];
            if len > 0 {
                bytes[at % len] = byte;
            }
            prop_assert_eq!(is_zero(&bytes), bytes.iter().all(|&b| b == 0));
        }
    }
}
