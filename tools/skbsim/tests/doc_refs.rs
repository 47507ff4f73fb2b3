//! Every reference in the repository resolves inside it (docs/README.md#citing):
//!
//! - no file cites a path outside the repository (the kernel-behaviour notes the project
//!   was started from, a checkout's absolute path) or an old-style rule number;
//! - every `docs/<page>.md#<anchor>` names a page under docs/ and an anchor it defines;
//! - every relative link in a Markdown file, and every repository path a Markdown file
//!   names in backticks, exists inside the repository;
//! - every kernel function the README's pipeline table names has a row in the index of
//!   docs/README.md, so a newcomer finds the model file that implements it.
//!
//! The scan walks the working tree (not git), skipping `.git`, build output and hidden
//! directories other than `.ci`, and every file that is not UTF-8 (pcaps, XDP objects).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

mod common;
use common::repo;

/// Substrings that only ever appear in a reference to something outside the repository.
/// Split with `concat!` so this file does not match itself.
const OUTSIDE: &[&str] = &[
    concat!("shared", "/spec"),
    concat!("kernel-", "datapath.md"),
    concat!("real-kernel-", "observations"),
    concat!("dependencies", ".md"),
    concat!("..", "/shared"),
    concat!("/wo", "rk/"),
];

/// Larger files are data, not text anyone cites from.
const MAX_TEXT: u64 = 8 << 20;

/// The repository's text files, relative to the root, sorted.
fn text_files(root: &Path) -> Vec<(PathBuf, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry"))
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let meta = fs::symlink_metadata(&path).expect("metadata");
            if name == ".git" {
                // A directory, or in a worktree a file naming the main checkout's.
                continue;
            }
            if meta.is_dir() {
                let skip = name.starts_with("target") || (name.starts_with('.') && name != ".ci");
                if !skip {
                    walk(root, &path, out);
                }
            } else if meta.is_file()
                && meta.len() <= MAX_TEXT
                && !name.ends_with(".snap.new")
                && !name.ends_with(".pending-snap")
            {
                if let Ok(text) = String::from_utf8(fs::read(&path).expect("read")) {
                    let rel = path
                        .strip_prefix(root)
                        .expect("inside the root")
                        .to_path_buf();
                    out.push((rel, text));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// What in `text` points outside the repository: one entry per offending match.
fn outside_refs(text: &str) -> Vec<String> {
    let mut found: Vec<String> = OUTSIDE
        .iter()
        .filter(|p| text.contains(*p))
        .map(|p| p.to_string())
        .collect();
    found.extend(rule_numbers(text));
    found
}

/// Old-style rule numbers (`R` digits `.` digits, not inside a longer word).
fn rule_numbers(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for i in 0..b.len() {
        if b[i] != b'R' || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
            continue;
        }
        let major = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let dot = i + 1 + major;
        if major == 0 || b.get(dot) != Some(&b'.') {
            continue;
        }
        let minor = b[dot + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if minor > 0 {
            out.push(text[i..dot + 1 + minor].to_string());
        }
    }
    out
}

/// `docs/<page>.md` references with their anchor, if any.
fn doc_refs(text: &str) -> Vec<(String, Option<String>)> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = Vec::new();
    for (i, _) in text.match_indices("docs/") {
        if text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            continue;
        }
        let rest = &text[i + 5..];
        let page: String = rest.chars().take_while(|&c| is_name(c)).collect();
        let Some(after) = rest[page.len()..].strip_prefix(".md") else {
            continue;
        };
        let anchor = after.strip_prefix('#').map(|a| {
            let raw: String = a.chars().take_while(|&c| is_name(c) || c == '.').collect();
            raw.trim_end_matches(['.', '-']).to_string()
        });
        out.push((format!("{page}.md"), anchor));
    }
    out
}

/// The anchors a Markdown page defines: `<a id="...">` and GitHub's heading slugs.
fn anchors(md: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for (i, _) in md.match_indices("<a id=\"") {
        let rest = &md[i + 7..];
        if let Some(end) = rest.find('"') {
            set.insert(rest[..end].to_string());
        }
    }
    for line in md.lines() {
        let t = line.trim_start_matches('#');
        if t.len() < line.len() && t.starts_with(' ') {
            let slug: String = t
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect();
            set.insert(slug);
        }
    }
    set
}

/// Duplicate `<a id>` definitions in one page.
fn duplicate_ids(md: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut dup = Vec::new();
    for (i, _) in md.match_indices("<a id=\"") {
        let rest = &md[i + 7..];
        if let Some(end) = rest.find('"') {
            if !seen.insert(&rest[..end]) {
                dup.push(rest[..end].to_string());
            }
        }
    }
    dup
}

/// The lines of a Markdown page outside fenced code blocks.
fn prose_lines(md: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    md.lines().filter(move |l| {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// Targets of inline Markdown links, `[text](target)`, outside fenced code.
fn md_links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(md) {
        for (i, _) in line.match_indices("](") {
            let rest = &line[i + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// Repository paths written in backticks (`sim/src/tun/read.rs`), without placeholders.
fn backticked_paths(md: &str) -> Vec<String> {
    const ROOTS: &[&str] = &[
        "sim/",
        "tools/",
        "scenarios/",
        "golden/",
        "ci/",
        "docs/",
        ".ci/",
    ];
    let mut out = Vec::new();
    for line in prose_lines(md) {
        for s in line.split('`').skip(1).step_by(2) {
            if ROOTS.iter().any(|r| s.starts_with(r))
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
            {
                out.push(s.to_string());
            }
        }
    }
    out
}

/// `rel` joined onto `dir` (both inside the root), or None when it climbs out of it.
fn resolve(dir: &Path, rel: &str) -> Option<PathBuf> {
    let mut parts: Vec<Component> = dir.components().collect();
    for c in Path::new(rel).components() {
        match c {
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::Normal(_) => parts.push(c),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

#[test]
fn no_file_cites_a_path_outside_the_repository() {
    let root = repo();
    let mut bad = Vec::new();
    for (path, text) in text_files(&root) {
        for hit in outside_refs(&text) {
            bad.push(format!("{}: {hit}", path.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "references outside the repository (cite docs/<page>.md#<anchor> instead):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_docs_reference_names_a_page_and_an_anchor_it_defines() {
    let root = repo();
    let files = text_files(&root);
    let mut bad = Vec::new();
    let mut checked = 0;
    for (path, text) in &files {
        for (page, anchor) in doc_refs(text) {
            checked += 1;
            let Ok(md) = fs::read_to_string(root.join("docs").join(&page)) else {
                bad.push(format!("{}: docs/{page} does not exist", path.display()));
                continue;
            };
            if let Some(a) = anchor {
                if !anchors(&md).contains(&a) {
                    bad.push(format!(
                        "{}: docs/{page}#{a}: no such anchor",
                        path.display()
                    ));
                }
            }
        }
    }
    for (path, text) in &files {
        if path.starts_with("docs") {
            for d in duplicate_ids(text) {
                bad.push(format!("{}: anchor {d} defined twice", path.display()));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The code cites the rules in well over a hundred places; a scan that finds none
    // is looking at the wrong tree.
    assert!(checked > 100, "only {checked} docs/ references found");
}

#[test]
fn markdown_links_and_paths_stay_inside_the_repository_and_exist() {
    let root = repo();
    let mut bad = Vec::new();
    for (path, text) in text_files(&root) {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        for link in md_links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match link.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                Some(path.clone())
            } else {
                resolve(dir, file)
            };
            let Some(target) = target else {
                bad.push(format!(
                    "{}: link {link} leaves the repository",
                    path.display()
                ));
                continue;
            };
            if !root.join(&target).exists() {
                bad.push(format!("{}: link {link}: no such file", path.display()));
                continue;
            }
            if let Some(a) = anchor {
                let md = fs::read_to_string(root.join(&target)).unwrap_or_default();
                if !anchors(&md).contains(a) {
                    bad.push(format!("{}: link {link}: no such anchor", path.display()));
                }
            }
        }
        for p in backticked_paths(&text) {
            if !root.join(&p).exists() {
                bad.push(format!("{}: `{p}` does not exist", path.display()));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_kernel_function_of_the_readme_pipeline_table_is_in_the_docs_index() {
    let root = repo();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md");
    let index = fs::read_to_string(root.join("docs/README.md")).expect("docs/README.md");
    let index = &index[index
        .find("<a id=\"index\">")
        .expect("docs/README.md#index")..];
    let rows: Vec<&str> = index.lines().filter(|l| l.starts_with("| ")).collect();
    let mut names = Vec::new();
    for line in readme.lines().filter(|l| l.starts_with("| `")) {
        let cols: Vec<&str> = line.split('|').collect();
        // | pipeline | kernel path | change | scenarios | real arm |
        if cols.len() == 7 && cols[1].trim().trim_matches('`').contains('-') {
            for word in cols[2].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.contains('_') && word.chars().all(|c| !c.is_ascii_uppercase()) {
                    names.push(word.to_string());
                }
            }
        }
    }
    assert!(
        names.len() >= 10,
        "README pipeline table not found: {names:?}"
    );
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| {
            !rows.iter().any(|r| {
                r.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| w == n.as_str())
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/README.md#index: {missing:?}"
    );
}

#[test]
fn the_checks_find_what_they_are_for() {
    // Old rule numbers, but not inside words or longer numbers.
    // Built with concat! so that this file does not hold the pattern it forbids.
    assert_eq!(
        rule_numbers(concat!("see R", "1.10 and (R", "2.4)")),
        [concat!("R", "1.10"), concat!("R", "2.4")]
    );
    assert!(rule_numbers("ROUTER1.2, xR1.2, R1, R.1, R1.").is_empty());
    let outside = format!("follow {}/x.md", concat!("shared", "/spec"));
    assert_eq!(outside_refs(&outside), [concat!("shared", "/spec")]);
    assert!(outside_refs("docs/tun-read.md#pi").is_empty());

    // docs references: page, anchor, sentence punctuation, dotted anchors.
    assert_eq!(
        doc_refs("(docs/tun-read.md#pi, docs/gro.md#tcp). See docs/profiles.md."),
        [
            ("tun-read.md".to_string(), Some("pi".to_string())),
            ("gro.md".to_string(), Some("tcp".to_string())),
            ("profiles.md".to_string(), None),
        ]
    );
    assert_eq!(
        doc_refs("docs/tun-read.md#history-3.12."),
        [("tun-read.md".to_string(), Some("history-3.12".to_string()))]
    );
    assert!(doc_refs("mydocs/x.md and docs/ alone").is_empty());

    let md = "<a id=\"pi\"></a>\n### The tun_pi prefix\n<a id=\"pi\"></a>\n";
    let a = anchors(md);
    assert!(a.contains("pi") && a.contains("the-tun_pi-prefix") && !a.contains("vnet"));
    assert_eq!(duplicate_ids(md), ["pi"]);

    assert_eq!(md_links("[a](b.md#c) and [d](#e)"), ["b.md#c", "#e"]);
    assert!(md_links("```\n[a](nowhere.md)\n```\n").is_empty());
    assert_eq!(
        backticked_paths("`sim/src/skb.rs`, `golden/<p>/`, `src/x.rs`, `cargo test`"),
        ["sim/src/skb.rs"]
    );
    assert_eq!(
        resolve(Path::new("tools/x"), "../../docs/gro.md"),
        Some(PathBuf::from("docs/gro.md"))
    );
    assert_eq!(resolve(Path::new("docs"), "../../outside.md"), None);
}
