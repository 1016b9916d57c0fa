//! Memory bandwidth of common adapters, from their makers' data sheets, so that `wick bench` can say
//! how close decoding comes to it. Decoding one token reads every weight once, so bandwidth divided by
//! the weight bytes is its ceiling.

/// GB/s by a distinctive part of the adapter's name; the first match wins, so longer names come first.
const KNOWN: &[(&str, f64)] = &[
    ("H200", 4800.0),
    ("H100 NVL", 3900.0),
    ("H100 80GB HBM3", 3350.0),
    ("H100 PCIe", 2000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100-SXM4-40GB", 1555.0),
    ("A100-PCIE-40GB", 1555.0),
    ("L40S", 864.0),
    ("RTX 4090", 1008.0),
    ("RTX 4080", 717.0),
    ("RTX 3090", 936.0),
    ("RTX 3080", 760.0),
    ("Apple M1 Ultra", 800.0),
    ("Apple M1 Max", 400.0),
    ("Apple M1 Pro", 200.0),
    ("Apple M1", 68.25),
    ("Apple M2 Ultra", 800.0),
    ("Apple M2 Max", 400.0),
    ("Apple M2 Pro", 200.0),
    ("Apple M2", 100.0),
    ("Apple M3 Max", 400.0),
    ("Apple M3 Pro", 150.0),
    ("Apple M3", 100.0),
    ("Apple M4 Max", 546.0),
    ("Apple M4 Pro", 273.0),
    ("Apple M4", 120.0),
];

/// The adapter's peak bandwidth in GB/s, where it is known.
pub fn known_gbps(adapter: &str) -> Option<f64> {
    KNOWN
        .iter()
        .find(|(name, _)| adapter.contains(name))
        .map(|&(_, gbps)| gbps)
}

#[cfg(test)]
mod tests {
    use super::known_gbps;

    #[test]
    fn the_most_specific_name_wins() {
        assert_eq!(known_gbps("NVIDIA H100 80GB HBM3"), Some(3350.0));
        assert_eq!(known_gbps("NVIDIA H100 PCIe"), Some(2000.0));
        assert_eq!(known_gbps("Apple M2 Pro"), Some(200.0));
        assert_eq!(known_gbps("Apple M2"), Some(100.0));
        assert_eq!(known_gbps("llvmpipe (LLVM 15.0.6, 256 bits)"), None);
    }
}
