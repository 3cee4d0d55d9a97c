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
    entries(ptx)
        .map(|(name, list, _)| {
            let sizes = list.split(',').map(str::trim).filter(|p| p.starts_with(".param")).map(param_size).collect();
            (name.to_string(), sizes)
        })
        .collect()
}

/// Each kernel entry point of `ptx` (`.entry name( … )`): its name, its
/// parameter list (between the parentheses) and the text after the list
/// (performance directives, then the body).
fn entries(ptx: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    let mut rest = ptx;
    std::iter::from_fn(move || {
        rest = &rest[rest.find(".entry ")? + ".entry ".len()..];
        let open = rest.find('(')?;
        let close = open + rest[open..].find(')')?;
        let entry = (rest[..open].trim(), &rest[open + 1..close], &rest[close..]);
        rest = entry.2;
        Some(entry)
    })
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

/// The kernels of `ptx` that wait for the grid before them on the stream
/// (an unguarded `griddepcontrol.wait`) before anything that could touch
/// memory or leave the straight line: before it, only declarations,
/// parameter loads and register arithmetic (moves, address conversions,
/// integer and compare instructions, guarded or not).
///
/// The launcher launches these, and no others, as programmatic dependents
/// of the kernel before them (`cuLaunchKernelEx` with programmatic stream
/// serialization): each reads nothing the earlier grid has yet to write and
/// writes nothing it has yet to read, because the wait returns only once
/// that grid has finished and its writes are visible. A kernel of any other
/// shape launches as a plain one.
pub fn waiting_entries(ptx: &str) -> Vec<String> {
    entries(ptx)
        // The body opens at the first brace after the parameters (after
        // performance directives such as `.maxntid`).
        .filter(|(_, _, after)| after.find('{').is_some_and(|b| waits_first(&after[b + 1..])))
        .map(|(name, _, _)| name.to_string())
        .collect()
}

/// Whether the statements from the start of a kernel's body reach an
/// unguarded `griddepcontrol.wait` with nothing but
/// [`harmless_before_wait`] statements, declarations and brace scopes
/// before it.
fn waits_first(body: &str) -> bool {
    let mut depth = 0usize;
    for line in body.lines() {
        let code = line.split("//").next().unwrap_or("");
        for statement in code.split(';').map(str::trim) {
            match statement {
                "" => {}
                "griddepcontrol.wait" => return true,
                "{" => depth += 1,
                // The body's own closing brace: no wait in it.
                "}" if depth == 0 => return false,
                "}" => depth -= 1,
                // Declarations (`.reg`, `.local`, `.shared`, `.loc`, …).
                s if s.starts_with('.') => {}
                s if harmless_before_wait(s) => {}
                _ => return false,
            }
        }
    }
    false
}

/// Whether a PTX statement (no `;`) may come before a dependent kernel's
/// wait: parameter loads, moves (special registers among them), address
/// conversions and register arithmetic, guarded or not. Anything else (a
/// label, a branch, a barrier, any other load, a store, a copy, an atomic,
/// an instruction this list does not name) is not.
pub(crate) fn harmless_before_wait(statement: &str) -> bool {
    const OPS: [&str; 21] = [
        "mov", "cvta", "cvt", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "setp", "selp",
        "min", "max", "neg", "abs", "ld.param", "prmt",
    ];
    // A guard (`@%p1`, `@!%p1`) leaves the instruction after it.
    let op = match statement.strip_prefix('@') {
        Some(guarded) => guarded.split_once(char::is_whitespace).map_or("", |(_, op)| op.trim_start()),
        None => statement,
    };
    let name = op.split(char::is_whitespace).next().unwrap_or("");
    !name.ends_with(':')
        && OPS.iter().any(|o| name == *o || name.strip_prefix(o).is_some_and(|rest| rest.starts_with('.')))
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

    #[test]
    fn convolution_kernels_wait_first_from_sm_90() {
        use coalesce_kernels::DEPENDENT_LAUNCH_MIN_SM;
        assert!(
            archs().iter().any(|&sm| sm >= DEPENDENT_LAUNCH_MIN_SM),
            "no embedded PTX for sm_{DEPENDENT_LAUNCH_MIN_SM}+"
        );
        for sm in archs() {
            let ptx = text(sm).unwrap();
            let waiting = waiting_entries(ptx);
            let entries: Vec<String> = entry_params(ptx).into_iter().map(|(name, _)| name).collect();
            let conv: Vec<&String> = entries.iter().filter(|n| n.starts_with("conv")).collect();
            assert!(conv.len() > 100, "sm_{sm}: {} convolution kernels", conv.len());
            if sm < DEPENDENT_LAUNCH_MIN_SM {
                assert!(waiting.is_empty(), "sm_{sm}: {waiting:?} wait");
                assert!(!ptx.contains("griddepcontrol"), "sm_{sm}");
                continue;
            }
            for name in &conv {
                assert!(waiting.contains(name), "sm_{sm}: {name} does not wait for the grid before it first");
            }
            // The wait is the convolution kernels' alone, and once each.
            for name in &waiting {
                assert!(name.starts_with("conv"), "sm_{sm}: {name} waits");
            }
            assert_eq!(ptx.matches("griddepcontrol.wait").count(), conv.len(), "sm_{sm}");
        }
    }

    #[test]
    fn waiting_entries_are_told_apart() {
        let entry = |name: &str, body: &str| {
            format!(".visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n.maxntid 256, 1, 1\n{{\n{body}\n}}\n")
        };
        let cases = [
            (
                "first",
                "\t.reg .b32 %r<4>;\n\t// begin inline asm\n\tgriddepcontrol.wait;\n\t// end inline asm\n\tret;",
                true,
            ),
            (
                "after_params",
                "\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [after_params_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
                 \tmov.u32 %r1, %tid.x;\n\t@%p1 add.s32 %r1, %r1, 1;\n\tgriddepcontrol.wait;\n\tst.global.u32 [%rd2], %r1;",
                true,
            ),
            ("in_a_scope", "\t{\n\t.reg .pred %p<2>;\n\tgriddepcontrol.wait;\n\t}\n\tret;", true),
            ("load_first", "\tld.global.u32 %r1, [%rd1];\n\tgriddepcontrol.wait;", false),
            ("guarded", "\t@%p1 griddepcontrol.wait;\n\tret;", false),
            ("label_first", "$L__BB0_1:\n\tgriddepcontrol.wait;", false),
            ("branch_first", "\t@%p1 bra $L__BB0_2;\n\tgriddepcontrol.wait;", false),
            ("shared_store_first", "\tst.shared.u32 [%r1], %r2;\n\tgriddepcontrol.wait;", false),
            ("copy_first", "\tcp.async.ca.shared.global [%r1], [%rd1], 16;\n\tgriddepcontrol.wait;", false),
            ("barrier_first", "\tbar.sync 0;\n\tgriddepcontrol.wait;", false),
            (
                "unknown_first",
                "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];\n\tgriddepcontrol.wait;",
                false,
            ),
            ("two_on_a_line", "\tmov.u32 %r1, 0; st.global.u32 [%rd1], %r1; griddepcontrol.wait;", false),
            ("none", "\tret;", false),
            ("empty_before_a_waiting_entry", "", false),
        ];
        let mut ptx: String = cases.iter().map(|(name, body, _)| entry(name, body)).collect();
        // A wait in a later entry is not this one's.
        ptx.push_str(&entry("after_none", "\tgriddepcontrol.wait;"));
        let waiting = waiting_entries(&ptx);
        for (name, _, waits) in cases {
            assert_eq!(waiting.contains(&name.to_string()), waits, "{name}");
        }
        assert!(waiting.contains(&"after_none".to_string()));
    }

    #[test]
    fn statements_before_the_wait_are_told_apart() {
        for s in [
            "ld.param.b32 %r1, [k_param_6]",
            "ld.param.u64 %rd1, [k_param_0]",
            "cvta.to.global.u64 %rd1, %rd18",
            "mul.lo.s32 %r1, %r123, 3",
            "mov.u32 %r2, %tid.x",
            "@%p1 add.s32 %r1, %r1, 1",
            "@!%p1 mad.lo.s32 %r1, %r2, %r3, %r4",
            "setp.lt.u32 %p1, %r1, %r2",
        ] {
            assert!(harmless_before_wait(s), "{s}");
        }
        for s in [
            "ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1]",
            "ld.u8 %rs1, [%rd2]",
            "ldu.global.u32 %r1, [%rd1]",
            "ld.const.f32 %f1, [MASK]",
            "st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4}",
            "@%p1 bra $L__BB0_2",
            "@!%p2 st.global.u32 [%rd1], %r1",
            "$L__BB0_1:",
            "cp.async.ca.shared.global [%r1], [%rd1], 16",
            "atom.global.add.u32 %r1, [%rd1], 1",
            "red.global.add.u32 [%rd1], 1",
            "bar.warp.sync -1",
            "barrier.sync 0",
            "membar.gl",
            "fence.acq_rel.gpu",
            "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}]",
            "prefetch.global.L2 [%rd1]",
            "call.uni foo, (%r1)",
            "ret",
            "exit",
            "trap",
            "movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2",
            "griddepcontrol.launch_dependents",
        ] {
            assert!(!harmless_before_wait(s), "{s}");
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
