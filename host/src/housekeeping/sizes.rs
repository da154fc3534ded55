//! The home's size by kind, for `hearth doctor`: each housekeeping kind,
//! the databases, the backups, and everything else, so the owner sees
//! where the disk goes before it fills.

use std::path::Path;

use super::kinds::{ALL, Kind, size_of};
use hearth_base::config::Config;

/// One line of the breakdown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// What: a housekeeping kind's key, `database`, `backups` or `other`.
    pub name: String,
    /// Its bytes.
    pub bytes: u64,
    /// Its files.
    pub files: u64,
}

/// The home's parts, largest first, `other` last; and the home's total.
pub fn by_kind(home: &Path, config: Option<&Config>) -> (Vec<Part>, u64) {
    let (total, _) = size_of(home);
    let mut parts: Vec<Part> = Vec::new();
    for kind in ALL {
        let (bytes, files) = match kind {
            // `logs/` holds both: split by name.
            Kind::Logs | Kind::ExecLogs => {
                let entries = kind.entries(home);
                (entries.iter().map(|e| e.bytes).sum(), entries.len() as u64)
            }
            _ => size_of(&kind.dir(home)),
        };
        parts.push(Part {
            name: kind.key().to_owned(),
            bytes,
            files,
        });
    }
    let (mut db_bytes, mut db_files) = (0, 0);
    for name in ["hearth.db", "agent_data.db"] {
        for suffix in ["", "-wal", "-shm"] {
            let (bytes, files) = size_of(&home.join(format!("{name}{suffix}")));
            db_bytes += bytes;
            db_files += files;
        }
    }
    parts.push(Part {
        name: "database".to_owned(),
        bytes: db_bytes,
        files: db_files,
    });
    let backups = config.map_or_else(|| home.join("backups"), |c| c.backup.dir_in(home));
    let (bytes, files) = size_of(&backups);
    let backups_inside = backups.starts_with(home);
    parts.push(Part {
        name: if backups_inside {
            "backups".to_owned()
        } else {
            format!("backups (in {})", backups.display())
        },
        bytes,
        files,
    });
    let counted: u64 = parts
        .iter()
        .filter(|p| !p.name.starts_with("backups (in "))
        .map(|p| p.bytes)
        .sum();
    parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    parts.push(Part {
        name: "other".to_owned(),
        bytes: total.saturating_sub(counted),
        files: 0,
    });
    (parts, total)
}

/// `bytes` for people: `512 B`, `3.4 KiB`, `1.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
