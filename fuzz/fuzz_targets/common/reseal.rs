//! `.skl` input for the fuzz targets behind its checksum: the header is re-sealed with the
//! payload's real length and CRC-32, so that mutations reach the parser instead of stopping
//! at the integrity check.

/// `data` with bytes 8..16 (payload length) and 16..20 (CRC-32 of the payload) made true.
pub fn reseal(data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    if b.len() >= 20 {
        let payload_len = (b.len() - 20) as u64;
        b[8..16].copy_from_slice(&payload_len.to_le_bytes());
        let crc = crc32fast::hash(&b[20..]);
        b[16..20].copy_from_slice(&crc.to_le_bytes());
    }
    b
}
