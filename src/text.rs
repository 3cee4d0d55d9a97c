//! Text as people read and write it on the command line: plain-text tables for the terminal, and byte sizes
//! ("4 KiB", "256MiB") in binary units (1 KiB = 1024 bytes). The `coalesce` commands and the bench suites share them.

use std::fmt;

/// A plain-text table: a header row and data rows of strings. By default the first column is left-aligned (labels) and
/// the others right-aligned (numbers); [`Table::align`] changes a column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    left: Vec<usize>,
}

/// How a table column's cells are padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text starts at the column's left edge.
    Left,
    /// Text ends at the column's right edge.
    Right,
}

impl Table {
    /// A table with these column headers and no rows.
    pub fn new<I, S>(headers: I) -> Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Table { headers: headers.into_iter().map(Into::into).collect(), rows: Vec::new(), left: vec![0] }
    }

    /// Sets the alignment of column `column` (0-based).
    pub fn align(&mut self, column: usize, align: Align) -> &mut Table {
        self.left.retain(|&c| c != column);
        if align == Align::Left {
            self.left.push(column);
        }
        self
    }

    /// Appends a row. Missing cells render empty; extra cells add columns.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the table has no data rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text: header, a rule of dashes, the rows; columns
    /// separated by two spaces, no trailing spaces, no final newline.
    pub fn render(&self) -> String {
        let ncols = self.rows.iter().map(Vec::len).chain([self.headers.len()]).max().unwrap_or(0);
        let cell = |row: &[String], c: usize| row.get(c).map_or("", String::as_str).to_string();
        let mut widths = vec![0usize; ncols];
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            for (c, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(cell(row, c).chars().count());
            }
        }
        let line = |row: &[String]| {
            let cells: Vec<String> = (0..ncols)
                .map(|c| {
                    let text = cell(row, c);
                    let pad = " ".repeat(widths[c] - text.chars().count());
                    if self.left.contains(&c) { format!("{text}{pad}") } else { format!("{pad}{text}") }
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        let mut out = vec![line(&self.headers), rule.join("  ")];
        out.extend(self.rows.iter().map(|r| line(r)));
        out.join("\n")
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// A byte count in binary units: "512 B", "4 KiB", "256 MiB", "2 GiB"; one decimal where the count is not a whole
/// number of the unit ("1.5 KiB").
pub fn human_bytes(bytes: u64) -> String {
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * unit);
    if bytes.is_multiple_of(scale) {
        format!("{} {}", bytes / scale, UNITS[unit])
    } else {
        format!("{:.1} {}", bytes as f64 / scale as f64, UNITS[unit])
    }
}

/// Parses a byte size: a whole number, optionally followed by a binary unit `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB`
/// (any case, optional space) or `B`. Decimal units (`KB`, `MB`, `GB`) are refused as ambiguous.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = (&t[..split], t[split..].trim());
    if digits.is_empty() {
        return Err(format!("`{text}` is not a size (examples: 4096, 4KiB, 256MiB, 2GiB)"));
    }
    let n: u64 = digits.parse().map_err(|_| format!("`{text}`: number too large"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        "kb" | "mb" | "gb" | "tb" => {
            return Err(format!(
                "`{text}`: decimal units are ambiguous here; write binary units (KiB, MiB, GiB) or bytes"
            ));
        }
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (use B, KiB, MiB, GiB, TiB)")),
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("`{text}` does not fit in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(2 << 30), "2 GiB");
        assert_eq!(human_bytes(3 << 40), "3 TiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4 kib"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("64B"), Ok(64));
        assert!(parse_size("4KB").unwrap_err().contains("ambiguous"));
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("1.5GiB").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn table_alignment() {
        let mut t = Table::new(["size", "GB/s", "note"]);
        t.row(["4 KiB", "12.5", "yes"]).row(["256 MiB", "3012.0"]);
        assert_eq!(t.len(), 2);
        let want = "size       GB/s  note\n-------  ------  ----\n4 KiB      12.5   yes\n256 MiB  3012.0";
        assert_eq!(t.render(), want);
        assert_eq!(t.to_string(), want);
        assert_eq!(Table::new(["a"]).render(), "a\n-");
        let mut kv = Table::new(["key", "value"]);
        kv.align(1, Align::Left).row(["threads", "1024"]).row(["L2", "50 MiB"]);
        assert_eq!(kv.render(), "key      value\n-------  ------\nthreads  1024\nL2       50 MiB");
        kv.align(0, Align::Right);
        assert!(kv.render().starts_with("    key  value"));
    }
}
