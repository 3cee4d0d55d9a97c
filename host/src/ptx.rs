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

/// Every kernel entry point in `ptx` with the byte size of each parameter,
/// in order (from `.visible .entry name( .param .u64 …, … )`).
///
/// The launcher checks arguments against this before calling the driver:
/// `cuLaunchKernel` reads one pointer per parameter from the argument
/// array, so a short array would make it read past the end of host memory.
pub fn entry_params(ptx: &str) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    let mut rest = ptx;
    while let Some(i) = rest.find(".entry ") {
        rest = &rest[i + ".entry ".len()..];
        let Some(open) = rest.find('(') else { break };
        let name = rest[..open].trim().to_string();
        let Some(close) = rest[open..].find(')') else { break };
        let list = &rest[open + 1..open + close];
        let sizes = list.split(',').map(str::trim).filter(|p| p.starts_with(".param")).map(param_size).collect();
        out.push((name, sizes));
        rest = &rest[open + close..];
    }
    out
}

/// Every module-level constant-memory array in `ptx` with its size in bytes
/// (from `.visible .const .align 4 .f32 MASK[1024];`).
pub fn const_symbols(ptx: &str) -> Vec<(String, usize)> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| l.contains(".const ") && l.ends_with("];") && !l.starts_with("//"))
        .filter_map(|l| {
            let decl = l.trim_end_matches(';');
            let name = decl.split_whitespace().find(|t| t.contains('['))?.split('[').next()?.to_string();
            Some((name, param_size(decl)))
        })
        .collect()
}

/// Byte size of one `.param` declaration: a scalar type (`.u64`, `.f32`,
/// …) or a byte array (`.align 8 .b8 name[16]`).
fn param_size(decl: &str) -> usize {
    if let (Some(l), Some(r)) = (decl.rfind('['), decl.rfind(']'))
        && let Ok(n) = decl[l + 1..r].trim().parse::<usize>()
    {
        let elem = decl.split_whitespace().find_map(scalar_size).unwrap_or(1);
        return n * elem;
    }
    decl.split_whitespace().find_map(scalar_size).unwrap_or(0)
}

fn scalar_size(token: &str) -> Option<usize> {
    match token {
        ".u8" | ".s8" | ".b8" => Some(1),
        ".u16" | ".s16" | ".b16" | ".f16" => Some(2),
        ".u32" | ".s32" | ".b32" | ".f32" => Some(4),
        ".u64" | ".s64" | ".b64" | ".f64" => Some(8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_parameters_are_read_from_ptx() {
        let ptx = "
.visible .entry copy_bytes(
	.param .u64 .ptr .align 1 copy_bytes_param_0,
	.param .u64 .ptr .align 1 copy_bytes_param_1,
	.param .u64 copy_bytes_param_2
)
{ ret; }
.visible .entry mixed(
	.param .u32 mixed_param_0,
	.param .align 8 .b8 mixed_param_1[24],
	.param .f32 mixed_param_2
)
{ ret; }
.visible .entry none()
{ ret; }
";
        assert_eq!(
            entry_params(ptx),
            vec![("copy_bytes".into(), vec![8, 8, 8]), ("mixed".into(), vec![4, 24, 4]), ("none".into(), vec![])]
        );
    }

    #[test]
    fn constant_symbols_are_read_from_ptx() {
        let ptx = ".extern .shared .align 16 .b8 DYN[];\n.visible .const .align 4 .u32 PROBE_TABLE[64];\n\
                   .visible .const .align 8 .f64 W[3];\n.shared .align 16 .u32 TILE[256];\n";
        assert_eq!(const_symbols(ptx), vec![("PROBE_TABLE".into(), 256), ("W".into(), 24)]);
        for sm in archs() {
            assert!(const_symbols(text(sm).unwrap()).contains(&("PROBE_TABLE".into(), 256)), "sm_{sm}");
        }
    }

    #[test]
    fn embedded_kernels_have_their_parameters() {
        for sm in archs() {
            let params = entry_params(text(sm).unwrap());
            let find = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, p)| p.clone());
            assert_eq!(find("copy_vec4"), Some(vec![8, 8, 8]), "sm_{sm}");
            assert_eq!(find("probe_warp_sum"), Some(vec![8, 8, 8, 8]), "sm_{sm}");
            assert_eq!(find("probe_index"), Some(vec![8]), "sm_{sm}");
        }
    }

    /// The body of entry `name` in `ptx` (from its opening brace), if the
    /// PTX has it.
    fn entry_body<'a>(ptx: &'a str, name: &str) -> Option<&'a str> {
        let start = ptx.find(&format!(".entry {name}("))?;
        let open = start + ptx[start..].find("\n{\n")?;
        let close = open + 2 + ptx[open + 2..].find("\n}\n")?;
        Some(&ptx[open..close])
    }

    /// Whether a PTX statement could touch memory or move control
    /// elsewhere (a label, a branch, a barrier, any load, store, copy or
    /// atomic but a parameter load).
    fn touches_memory_or_branches(statement: &str) -> bool {
        const OPS: [&str; 20] = [
            "ld.", "st.", "cp.", "atom", "red.", "prefetch", "bra", "ret", "exit", "call", "bar", "membar", "fence",
            "tex", "tld", "suld", "sust", "multimem", "mbarrier", "discard",
        ];
        // A guard (`@%p1`, `@!%p1`) leaves the instruction after it.
        let op = match statement.strip_prefix('@') {
            Some(guarded) => guarded.split_once(char::is_whitespace).map_or("", |(_, op)| op.trim_start()),
            None => statement,
        };
        statement.ends_with(':') || (OPS.iter().any(|o| op.starts_with(o)) && !op.starts_with("ld.param"))
    }

    #[test]
    fn dependent_kernels_wait_before_touching_memory() {
        use coalesce_kernels::{DEPENDENT_LAUNCH, DEPENDENT_LAUNCH_MIN_SM};
        assert!(!DEPENDENT_LAUNCH.is_empty());
        assert!(
            archs().iter().any(|&sm| sm >= DEPENDENT_LAUNCH_MIN_SM),
            "no embedded PTX for sm_{DEPENDENT_LAUNCH_MIN_SM}+"
        );
        for sm in archs() {
            let ptx = text(sm).unwrap();
            for &name in DEPENDENT_LAUNCH {
                // The box rows kernels exist from sm_80 on.
                let Some(body) = entry_body(ptx, name) else {
                    assert!(sm < 80, "sm_{sm}: no entry {name}");
                    continue;
                };
                let waits = body.matches("griddepcontrol.wait").count();
                if sm < DEPENDENT_LAUNCH_MIN_SM {
                    assert_eq!(waits, 0, "sm_{sm}: {name}");
                    continue;
                }
                assert_eq!(waits, 1, "sm_{sm}: {name}");
                let before = &body[..body.find("griddepcontrol.wait").unwrap()];
                for line in before.lines().skip(1) {
                    let statement = line.split("//").next().unwrap_or("").trim();
                    assert!(
                        !touches_memory_or_branches(statement),
                        "sm_{sm}: {name} runs `{statement}` before its griddepcontrol.wait"
                    );
                }
            }
            // Every kernel that waits is launched as a dependent (the list
            // is complete).
            for entry in ptx.split(".entry ").skip(1) {
                let name = entry.split('(').next().unwrap_or("").trim();
                let body = entry_body(ptx, name).unwrap();
                if body.contains("griddepcontrol") {
                    assert!(DEPENDENT_LAUNCH.contains(&name), "sm_{sm}: {name} waits but is not in DEPENDENT_LAUNCH");
                }
            }
        }
    }

    #[test]
    fn statements_that_touch_memory_or_branch_are_told_apart() {
        for s in [
            "ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];",
            "ld.u8 %rs1, [%rd2];",
            "st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};",
            "@%p1 bra $L__BB0_2;",
            "@!%p2 st.global.u32 [%rd1], %r1;",
            "$L__BB0_1:",
            "cp.async.ca.shared.global [%r1], [%rd1], 16;",
            "atom.global.add.u32 %r1, [%rd1], 1;",
            "bar.warp.sync -1;",
            "barrier.sync 0;",
            "ret;",
        ] {
            assert!(touches_memory_or_branches(s), "{s}");
        }
        for s in [
            "ld.param.b32 %r1, [k_param_6];",
            "cvta.to.global.u64 %rd1, %rd18;",
            "mul.lo.s32 %r1, %r123, 3;",
            "mov.u32 %r2, %tid.x;",
            "@%p1 add.s32 %r1, %r1, 1;",
            "",
        ] {
            assert!(!touches_memory_or_branches(s), "{s}");
        }
    }

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
