//! Turns a position in a description file into `file:line:col: [[frame]] K: key `a.b``
//! so that every error names where it is.

/// Formats a TOML/serde error as `file:line:col: [[frame]] K: key `a.b`: message`.
pub fn toml_error(text: &str, name: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return format!("{name}: {msg}");
    };
    let pos = span.start.min(text.len());
    let before = text.get(..pos).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    let mut out = format!("{name}:{line}:{col}: ");
    if let Some(k) = frame_at(text, pos) {
        out += &format!("[[frame]] {k}: ");
    }
    // For an unknown field the span is the key itself: name its parent table.
    let path = key_path(&before[line_start..], !msg.starts_with("unknown field"));
    if !path.is_empty() {
        out += &format!("key `{}`: ", path.join("."));
    }
    out + &msg
}

/// Index of the `[[frame]]` table that contains byte `pos`, if any.
fn frame_at(text: &str, pos: usize) -> Option<usize> {
    let mut k = None;
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        if off > pos {
            break;
        }
        let t = line.trim_start();
        if t.starts_with("[[frame]]") {
            k = Some(k.map_or(0, |k| k + 1));
        } else if t.starts_with('[') && !t.starts_with("[frame.") {
            k = None;
        }
        off += line.len();
    }
    k
}

/// Line number (1-based) of the `k`-th `[[frame]]` header.
pub fn frame_line(text: &str, k: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("[[frame]]"))
        .nth(k)
        .map(|(i, _)| i + 1)
}

/// The dotted key whose value starts at the end of `prefix` (one line of TOML), or
/// without `leaf` the inline table being written there.
fn key_path(prefix: &str, leaf: bool) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut token = String::new();
    let mut last: Option<String> = None;
    let mut in_str: Option<char> = None;
    for c in prefix.chars() {
        if let Some(q) = in_str {
            if c == q {
                in_str = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => in_str = Some(c),
            '=' => last = Some(std::mem::take(&mut token).trim().to_string()),
            '{' | '[' => {
                stack.push(last.take().unwrap_or_default());
                token.clear();
            }
            '}' | ']' => {
                stack.pop();
                token.clear();
            }
            ',' => {
                last = None;
                token.clear();
            }
            _ => token.push(c),
        }
    }
    if leaf {
        stack.extend(last);
    }
    stack.retain(|k| !k.is_empty());
    stack
}
