//! The embedded PTX, one per architecture, and the run-time choice among
//! them.

use crate::error::{Error, Result};

include!(concat!(env!("OUT_DIR"), "/embedded_ptx.rs"));

/// Architectures the library embeds PTX for (`70` for `sm_70`), ascending.
pub fn archs() -> Vec<u32> {
    EMBEDDED_PTX.iter().map(|(sm, _)| *sm).collect()
}

/// The PTX text built for `sm_<sm>`, if embedded.
pub fn text(sm: u32) -> Option<&'static str> {
    EMBEDDED_PTX.iter().find(|(a, _)| *a == sm).map(|(_, t)| *t)
}

/// The highest embedded architecture not above compute capability
/// `major.minor`: PTX for `sm_X` runs (JIT-compiled) on any device of
/// capability X or higher.
pub fn select(major: u32, minor: u32) -> Result<(u32, &'static str)> {
    select_from(EMBEDDED_PTX, major, minor)
}

fn select_from(table: &[(u32, &'static str)], major: u32, minor: u32) -> Result<(u32, &'static str)> {
    let device = major * 10 + minor;
    table.iter().filter(|(sm, _)| *sm <= device).max_by_key(|(sm, _)| *sm).copied().ok_or_else(|| {
        Error::NoCompatiblePtx {
            major,
            minor,
            available: table.iter().map(|(sm, _)| format!("sm_{sm}")).collect::<Vec<_>>().join(", "),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[(u32, &str)] = &[(70, "a"), (90, "b")];

    #[test]
    fn picks_highest_not_above_device() {
        assert_eq!(select_from(TABLE, 9, 0).unwrap().0, 90);
        assert_eq!(select_from(TABLE, 10, 0).unwrap().0, 90);
        assert_eq!(select_from(TABLE, 8, 9).unwrap().0, 70);
        assert_eq!(select_from(TABLE, 7, 0).unwrap().0, 70);
    }

    #[test]
    fn older_device_is_a_clear_error() {
        let e = select_from(TABLE, 6, 1).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("6.1") && msg.contains("sm_70, sm_90") && msg.contains("sm_61"), "{msg}");
    }

    #[test]
    fn default_build_embeds_each_arch_with_its_target_line() {
        assert!(!archs().is_empty());
        for sm in archs() {
            let t = text(sm).unwrap();
            assert!(t.contains(&format!(".target sm_{sm}")), "sm_{sm}");
            assert!(t.contains(".visible .entry copy_vec4("), "sm_{sm}");
        }
    }
}
