//! What the compiler really emitted: `ptxas`'s per-kernel resource report
//! (registers, stack frame, spills, shared memory) and the SASS that runs,
//! from `cuobjdump -sass`.
//!
//! A vector width, a shared-memory instruction or a shuffle mode is a
//! property to *check*, not to hope for: the tests assert them here, and
//! `coalesce sass` prints them. No GPU is needed, only the two tools.
//!
//! Tools are found in `$COALESCE_SASS_TOOLS` (a directory), then the
//! project's `.tools/sass/bin` (written by `scripts/setup-build-machine.sh`),
//! then `/usr/local/cuda/bin`, then `PATH`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Directory holding `ptxas` and `cuobjdump` (and `nvdisasm`, which
/// cuobjdump runs).
pub const TOOLS_ENV: &str = "COALESCE_SASS_TOOLS";

/// When set (non-empty, not `0`), a missing tool is a test failure instead
/// of a skip. CI sets it.
pub const REQUIRE_ENV: &str = "COALESCE_REQUIRE_SASS_TOOLS";

/// The two tools.
#[derive(Clone, Debug)]
pub struct Tools {
    /// `ptxas`: PTX → cubin, with `-v` resource report.
    pub ptxas: PathBuf,
    /// `cuobjdump`: cubin → SASS listing.
    pub cuobjdump: PathBuf,
}

impl Tools {
    /// Finds both tools, or `None` when either is missing.
    pub fn find() -> Option<Tools> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(d) = std::env::var_os(TOOLS_ENV) {
            dirs.push(d.into());
        }
        dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/sass/bin"));
        dirs.push("/usr/local/cuda/bin".into());
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        let find = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
        Some(Tools { ptxas: find("ptxas")?, cuobjdump: find("cuobjdump")? })
    }

    /// True when `COALESCE_REQUIRE_SASS_TOOLS` asks for the tools to be
    /// present.
    pub fn required() -> bool {
        std::env::var(REQUIRE_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
    }

    /// `ptxas`'s version line.
    pub fn ptxas_version(&self) -> Result<String> {
        let out = run(&self.ptxas, "ptxas", Command::new(&self.ptxas).arg("--version"))?;
        Ok(out.lines().last().unwrap_or_default().trim().to_string())
    }

    /// Assembles `ptx` for `sm_<arch>` and disassembles the result.
    pub fn compile(&self, ptx: &str, arch: u32) -> Result<Compiled> {
        let dir = tempfile::tempdir().map_err(|e| tool_err("ptxas", format!("cannot create a temp dir: {e}")))?;
        let src = dir.path().join("kernels.ptx");
        let cubin = dir.path().join("kernels.cubin");
        std::fs::write(&src, ptx).map_err(|e| tool_err("ptxas", format!("cannot write {}: {e}", src.display())))?;
        let mut cmd = Command::new(&self.ptxas);
        cmd.arg(format!("-arch=sm_{arch}")).arg("-v").arg(&src).arg("-o").arg(&cubin);
        let report = match run(&self.ptxas, "ptxas", &mut cmd) {
            Err(Error::Tool { message, .. })
                if message.contains("not defined for option") || message.contains("higher than default") =>
            {
                return Err(Error::ToolArch {
                    tool: "ptxas",
                    arch,
                    message: message.lines().next().unwrap_or_default().to_string(),
                });
            }
            r => r?,
        };
        let mut dis = Command::new(&self.cuobjdump);
        dis.arg("-sass").arg(&cubin);
        // cuobjdump runs nvdisasm, which sits beside it.
        if let Some(dir) = self.cuobjdump.parent() {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut paths = vec![dir.to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            if let Ok(joined) = std::env::join_paths(paths) {
                dis.env("PATH", joined);
            }
        }
        let sass = run(&self.cuobjdump, "cuobjdump", &mut dis)?;
        Ok(Compiled { arch, resources: parse_ptxas_report(&report), sass: parse_sass(&sass) })
    }
}

fn tool_err(tool: &'static str, message: String) -> Error {
    Error::Tool { tool, message }
}

/// Runs a tool; stdout and stderr together on success, an error with both
/// on failure.
fn run(path: &Path, tool: &'static str, cmd: &mut Command) -> Result<String> {
    let out = cmd.output().map_err(|e| tool_err(tool, format!("cannot run {}: {e}", path.display())))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(tool_err(tool, format!("{} exited with {}: {}", path.display(), out.status, text.trim())))
    }
}

/// One kernel's line of the `ptxas -v` report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// Kernel name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Stack frame per thread, bytes.
    pub stack_frame: u32,
    /// Spill stores, bytes.
    pub spill_stores: u32,
    /// Spill loads, bytes.
    pub spill_loads: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Named barriers used.
    pub barriers: u32,
}

/// One SASS instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    /// Opcode with modifiers, e.g. `LDG.E.128`.
    pub opcode: String,
    /// Guarded by a predicate (`@P0`, `@!P1`).
    pub predicated: bool,
    /// Operand text.
    pub operands: String,
}

/// Direction of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// A load.
    Load,
    /// A store.
    Store,
}

impl Instr {
    /// For global loads/stores (`LDG`/`STG`): direction and width in bits.
    pub fn global_access(&self) -> Option<(Access, u32)> {
        let mut parts = self.opcode.split('.');
        let kind = match parts.next()? {
            "LDG" => Access::Load,
            "STG" => Access::Store,
            _ => return None,
        };
        let mut bits = 32;
        for m in parts {
            bits = match m {
                "U8" | "S8" => 8,
                "U16" | "S16" => 16,
                "64" => 64,
                "128" => 128,
                _ => bits,
            };
        }
        Some((kind, bits))
    }

    /// The opcode without modifiers (`LDG` for `LDG.E.128`).
    pub fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or_default()
    }

    /// Every constant-bank-0 operand (`c[0x0][…]`, where kernel parameters
    /// live): its immediate offset and whether a register is added to it
    /// (`c[0x0][UR8+0x240]`, `c[0x0][R5]`; `RZ` is no register).
    pub fn bank0_reads(&self) -> Vec<BankRead> {
        self.operands
            .split("c[0x0][")
            .skip(1)
            .filter_map(|r| {
                let inner = r.split(']').next()?;
                let mut offset = 0;
                let mut register = false;
                for term in inner.split('+').map(str::trim) {
                    if let Some(hex) = term.strip_prefix("0x") {
                        offset = u32::from_str_radix(hex, 16).ok()?;
                    } else if term != "RZ" && term != "URZ" {
                        register = true;
                    }
                }
                Some(BankRead { offset, register })
            })
            .collect()
    }
}

/// One operand read from constant bank 0 (see [`Instr::bank0_reads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankRead {
    /// The immediate byte offset into the bank.
    pub offset: u32,
    /// True when a register is added to the offset.
    pub register: bool,
}

/// Where the kernel parameters start in constant bank 0 on architecture
/// `sm`: `0x210` from sm_90 on, `0x160` before (the byte offsets `ptxas`
/// gives the first parameter).
pub fn param_bank_start(sm: u32) -> u32 {
    if sm >= 90 { 0x210 } else { 0x160 }
}

/// The byte offset of each parameter of a kernel whose PTX parameters have
/// byte sizes `sizes`, as the driver lays them out: each at the next
/// multiple of its alignment (its size for scalars, 8 for the 8-aligned
/// arrays this crate passes by value).
pub fn param_offsets(sizes: &[usize]) -> Vec<u32> {
    let mut at = 0usize;
    sizes
        .iter()
        .map(|&size| {
            let align = if matches!(size, 1 | 2 | 4 | 8) { size } else { 8 };
            at = at.div_ceil(align) * align;
            let here = at;
            at += size;
            here as u32
        })
        .collect()
}

/// A PTX module assembled for one architecture.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The `sm_` number.
    pub arch: u32,
    /// Resource report per kernel, in ptxas's order.
    pub resources: Vec<KernelResources>,
    /// SASS per kernel.
    pub sass: BTreeMap<String, Vec<Instr>>,
}

impl Compiled {
    /// The SASS of kernel `name`.
    pub fn kernel(&self, name: &str) -> Option<&[Instr]> {
        self.sass.get(name).map(Vec::as_slice)
    }

    /// The resource report of kernel `name`.
    pub fn resources_of(&self, name: &str) -> Option<&KernelResources> {
        self.resources.iter().find(|r| r.name == name)
    }

    /// Distinct (direction, width) pairs of kernel `name`'s global accesses.
    pub fn global_widths(&self, name: &str) -> Vec<(Access, u32)> {
        let mut v: Vec<_> = self.kernel(name).unwrap_or_default().iter().filter_map(Instr::global_access).collect();
        v.sort_by_key(|&(a, b)| (a == Access::Store, b));
        v.dedup();
        v
    }

    /// True when kernel `name` has an instruction whose opcode starts with
    /// `prefix`.
    pub fn has(&self, name: &str, prefix: &str) -> bool {
        self.kernel(name).unwrap_or_default().iter().any(|i| i.opcode.starts_with(prefix))
    }

    /// The resource table, one row per kernel.
    pub fn resource_table(&self) -> String {
        let mut rows = vec![format!(
            "{:<24} {:>5} {:>6} {:>7} {:>7} {:>7} {:>5}",
            format!("kernel (sm_{})", self.arch),
            "regs",
            "stack",
            "spill-s",
            "spill-l",
            "smem",
            "bars"
        )];
        let mut sorted: Vec<_> = self.resources.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        for r in sorted {
            rows.push(format!(
                "{:<24} {:>5} {:>6} {:>7} {:>7} {:>7} {:>5}",
                r.name, r.registers, r.stack_frame, r.spill_stores, r.spill_loads, r.shared_bytes, r.barriers
            ));
        }
        rows.join("\n")
    }
}

/// Parses `ptxas -v` output into one entry per kernel.
pub fn parse_ptxas_report(text: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    let num_before = |line: &str, word: &str| -> Option<u32> {
        let i = line.find(word)?;
        line[..i].split_whitespace().last()?.parse().ok()
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            out.push(KernelResources { name, ..Default::default() });
        } else if let Some(cur) = out.last_mut() {
            if line.contains("bytes stack frame") {
                cur.stack_frame = num_before(line, "bytes stack frame").unwrap_or(0);
                cur.spill_stores = num_before(line, "bytes spill stores").unwrap_or(0);
                cur.spill_loads = num_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains(" registers") {
                cur.registers = num_before(line, "registers").unwrap_or(0);
                cur.shared_bytes = num_before(line, "bytes smem").unwrap_or(0);
                cur.barriers = num_before(line, "barriers").unwrap_or(0);
            }
        }
    }
    out
}

/// Parses `cuobjdump -sass` output into instructions per kernel.
pub fn parse_sass(text: &str) -> BTreeMap<String, Vec<Instr>> {
    let mut out: BTreeMap<String, Vec<Instr>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function : ") {
            current = Some(name.trim().to_string());
            out.entry(name.trim().to_string()).or_default();
            continue;
        }
        let Some(name) = &current else { continue };
        // `/*0440*/   @!P0 LDG.E.128 R4, desc[UR12][R4.64] ;   /* 0x... */`
        let Some(rest) = t.strip_prefix("/*").and_then(|r| r.split_once("*/")).map(|(_, r)| r.trim()) else {
            continue;
        };
        let body = rest.split(';').next().unwrap_or_default().trim();
        if body.is_empty() || body.starts_with("/*") {
            continue;
        }
        let (predicated, body) = match body.strip_prefix('@') {
            Some(r) => (true, r.split_once(char::is_whitespace).map_or("", |(_, b)| b.trim())),
            None => (false, body),
        };
        let (opcode, operands) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        out.get_mut(name).expect("entry created above").push(Instr {
            opcode: opcode.to_string(),
            predicated,
            operands: operands.trim().to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'probe_shared_reverse' for 'sm_90'
ptxas info    : Function properties for probe_shared_reverse
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compiling entry function 'local' for 'sm_70'
ptxas info    : Function properties for local
    48 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 30 registers, 368 bytes cmem[0]
";

    #[test]
    fn report_is_parsed() {
        let r = parse_ptxas_report(REPORT);
        assert_eq!(
            r[0],
            KernelResources {
                name: "probe_shared_reverse".into(),
                registers: 12,
                stack_frame: 0,
                spill_stores: 0,
                spill_loads: 0,
                shared_bytes: 1024,
                barriers: 1
            }
        );
        assert_eq!((r[1].registers, r[1].stack_frame, r[1].spill_stores, r[1].spill_loads), (30, 48, 8, 4));
    }

    const SASS: &str = "
	code for sm_90
		Function : copy_vec4
	.headerflags	@\"EF_CUDA_TEXMODE_UNIFIED\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
        /*0270*/              @!P0 LDG.E R5, desc[UR12][R4.64] ;              /* 0x0000000c04058981 */
        /*0440*/                   LDG.E.128 R4, desc[UR12][R4.64] ;          /* 0x0000000c04047981 */
        /*04d0*/                   STG.E.128 desc[UR12][R10.64], R4 ;         /* 0x000000040a007986 */
		Function : copy_bytes
        /*0180*/                   LDG.E.U8 R3, desc[UR12][R2.64] ;           /* 0x0000000c02037981 */
        /*0210*/                   STG.E.U8.SYS [R4], R3 ;                    /* 0x0000000304007986 */
";

    #[test]
    fn sass_is_parsed_with_widths() {
        let s = parse_sass(SASS);
        let v4 = &s["copy_vec4"];
        assert_eq!(v4.len(), 4);
        assert!(v4[1].predicated && v4[1].opcode == "LDG.E");
        let c = Compiled { arch: 90, resources: vec![], sass: s };
        assert_eq!(c.global_widths("copy_vec4"), vec![(Access::Load, 32), (Access::Load, 128), (Access::Store, 128)]);
        assert_eq!(c.global_widths("copy_bytes"), vec![(Access::Load, 8), (Access::Store, 8)]);
        assert!(c.has("copy_vec4", "LDC") && !c.has("copy_bytes", "LDC"));
    }

    #[test]
    fn bank0_operands_and_parameter_offsets() {
        let i = |ops: &str| Instr { opcode: "FFMA".into(), predicated: false, operands: ops.into() };
        assert_eq!(i("R4, R4, c[0x0][0x240], RZ").bank0_reads(), [BankRead { offset: 0x240, register: false }]);
        assert_eq!(i("UR4, c[0x0][UR8+0x218]").bank0_reads(), [BankRead { offset: 0x218, register: true }]);
        assert_eq!(i("R1, c[0x0][R5]").bank0_reads(), [BankRead { offset: 0, register: true }]);
        assert_eq!(i("R7, c[0x0][RZ]").bank0_reads(), [BankRead { offset: 0, register: false }]);
        assert_eq!(i("R2, c[0x3][0x10], c[0x0][0x28]").bank0_reads(), [BankRead { offset: 0x28, register: false }]);
        assert!(i("R2, R3").bank0_reads().is_empty());
        // (input, output, n, mask, w, left, mode, taps[4000])
        assert_eq!(param_offsets(&[8, 8, 8, 8, 4, 4, 4, 4000]), [0, 8, 16, 24, 32, 36, 40, 48]);
        assert_eq!(param_offsets(&[8, 4, 256]), [0, 8, 16]);
        assert_eq!((param_bank_start(70), param_bank_start(86), param_bank_start(90)), (0x160, 0x160, 0x210));
    }
}
