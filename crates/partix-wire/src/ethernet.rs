//! Ethernet II header view.

use crate::{get_u16, put_u16, Field, Rest, WireError};

mod field {
    use super::{Field, Rest};
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// Length of an Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Minimum frame length without the FCS; shorter frames are padded with zeros by the sender.
pub const MIN_FRAME_LEN: usize = 60;

/// A six-byte MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// The broadcast address.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// Parse `aa:bb:cc:dd:ee:ff` or `aa-bb-cc-dd-ee-ff`: six bytes of exactly two hex digits
    /// each (either case), all separated by the same character. Anything else is `None` (a
    /// leading `+`, one digit, or mixed separators were accepted before).
    pub fn parse(s: &str) -> Option<EthernetAddress> {
        let b = s.as_bytes();
        if b.len() != 17 || (b[2] != b':' && b[2] != b'-') {
            return None;
        }
        let sep = b[2];
        let hex = |c: u8| char::from(c).to_digit(16);
        let mut out = [0u8; 6];
        for (i, o) in out.iter_mut().enumerate() {
            let at = 3 * i;
            if i > 0 && b[at - 1] != sep {
                return None;
            }
            *o = u8::try_from(hex(b[at])? * 16 + hex(b[at + 1])?).ok()?;
        }
        Some(EthernetAddress(out))
    }

    /// Return whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Return whether this is a group (multicast or broadcast) address: bit 0 of the first
    /// octet set. No station sends from one; a frame claiming such a source is forged.
    pub fn is_group(&self) -> bool {
        self.0[0] & 1 != 0
    }
}

impl core::fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let a = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            a[0], a[1], a[2], a[3], a[4], a[5]
        )
    }
}

/// A zero-copy view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wrap `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wrap `buffer`, checking that it holds a whole header.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when the buffer is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(EthernetFrame { buffer })
    }

    /// Return the destination address.
    pub fn dst_addr(&self) -> EthernetAddress {
        let mut a = [0u8; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        EthernetAddress(a)
    }

    /// Return the source address.
    pub fn src_addr(&self) -> EthernetAddress {
        let mut a = [0u8; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        EthernetAddress(a)
    }

    /// Return the EtherType.
    pub fn ethertype(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::ETHERTYPE)
    }

    /// Return the payload.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }

    /// Return the inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Set the destination address.
    pub fn set_dst_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a.0);
    }

    /// Set the source address.
    pub fn set_src_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a.0);
    }

    /// Set the EtherType.
    pub fn set_ethertype(&mut self, t: u16) {
        put_u16(self.buffer.as_mut(), field::ETHERTYPE, t);
    }

    /// Return the payload, mutably.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let mut buf = [0u8; 20];
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        let a = EthernetAddress::parse("02:00:00:00:00:01").unwrap();
        f.set_dst_addr(EthernetAddress::BROADCAST);
        f.set_src_addr(a);
        f.set_ethertype(0x88b5);
        f.payload_mut()[0] = 7;
        let f = EthernetFrame::new_checked(&buf[..]).unwrap();
        assert!(f.dst_addr().is_broadcast());
        assert_eq!(f.src_addr(), a);
        assert_eq!(f.ethertype(), 0x88b5);
        assert_eq!(f.payload()[0], 7);
        assert_eq!(
            EthernetFrame::new_checked(&buf[..13]).err(),
            Some(WireError::Truncated)
        );
    }

    #[test]
    fn group_addresses_have_bit_0_of_the_first_octet_set() {
        assert!(EthernetAddress::BROADCAST.is_group());
        assert!(EthernetAddress([0x01, 0x00, 0x5e, 0, 0, 1]).is_group());
        assert!(EthernetAddress([0x33, 0x33, 0, 0, 0, 1]).is_group());
        assert!(!EthernetAddress([0x02, 0, 0, 0, 0, 1]).is_group());
        assert!(!EthernetAddress([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff]).is_group());
    }

    #[test]
    fn mac_parse_rejects_garbage() {
        assert!(EthernetAddress::parse("02:00:00:00:00").is_none());
        assert!(EthernetAddress::parse("02:00:00:00:00:01:02").is_none());
        assert!(EthernetAddress::parse("zz:00:00:00:00:01").is_none());
        assert!(EthernetAddress::parse("").is_none());
        // `u8::from_str_radix` takes a leading '+'; a byte is exactly two hex digits.
        assert!(EthernetAddress::parse("+1:+2:+3:+4:+5:+6").is_none());
        assert!(EthernetAddress::parse("2:0:0:0:0:1").is_none());
        assert!(EthernetAddress::parse("002:00:00:00:00:1").is_none());
        // One separator throughout.
        assert!(EthernetAddress::parse("02:00-00:00-00:01").is_none());
        assert!(EthernetAddress::parse("02-00-00-00-00:01").is_none());
        assert!(EthernetAddress::parse("02.00.00.00.00.01").is_none());
        assert!(EthernetAddress::parse("02:00:00:00:00:01:").is_none());
        assert!(EthernetAddress::parse("02:00:00:00:00:é").is_none());
    }

    #[test]
    fn mac_parse_accepts_both_separators_and_cases() {
        let want = EthernetAddress([0x02, 0x70, 0x66, 0x73, 0xab, 0x0b]);
        for s in [
            "02:70:66:73:ab:0b",
            "02-70-66-73-ab-0b",
            "02:70:66:73:AB:0B",
            "02-70-66-73-Ab-0b",
        ] {
            assert_eq!(EthernetAddress::parse(s), Some(want), "{s}");
        }
        assert_eq!(
            EthernetAddress::parse("ff:ff:ff:ff:ff:ff"),
            Some(EthernetAddress::BROADCAST)
        );
    }
}
