//! The field-level trace comparison of [`super::diff`] for traces of any size: blocks are
//! compared as they arrive, so neither trace is held in memory. One side is pushed (the
//! trace being rendered), the other pulled from a reader (a golden file, or the second
//! trace of `skbsim diff`). The answer is the one [`super::diff::first_divergence`] gives
//! for the whole texts; a test checks that on every golden.

use std::io::{self, BufRead};

use super::diff::{compare_blocks, extra_event, parse_block, skipped, Divergence};

/// Reads a trace block by block (blocks are separated by blank lines). The first block is
/// the header. An insta snapshot's `---` front matter is skipped.
#[derive(Debug)]
pub struct BlockReader<R> {
    r: R,
    line: String,
    block: String,
    blocks: u64,
    started: bool,
}

/// A line longer than this is no trace line (the longest a renderer writes is a few
/// hundred bytes): reading stops with an error instead of growing without bound.
pub const MAX_LINE: usize = 1 << 20;

impl<R: BufRead> BlockReader<R> {
    pub fn new(r: R) -> BlockReader<R> {
        BlockReader {
            r,
            line: String::new(),
            block: String::new(),
            blocks: 0,
            started: false,
        }
    }

    fn read_line(&mut self) -> io::Result<bool> {
        self.line.clear();
        let mut limited = io::Read::take(&mut self.r, MAX_LINE as u64 + 1);
        let n = limited.read_line(&mut self.line)?;
        if n > MAX_LINE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a line longer than {MAX_LINE} bytes: not a trace"),
            ));
        }
        Ok(n > 0)
    }

    /// Skip insta's front matter (`---` ... `---`) if the text starts with it.
    fn start(&mut self) -> io::Result<()> {
        self.started = true;
        if !self.read_line()? {
            return Ok(());
        }
        if self.line == "---\n" {
            loop {
                if !self.read_line()? || self.line == "---\n" {
                    self.line.clear();
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The next block's text and whether it is the header; None at the end.
    pub fn next_block(&mut self) -> io::Result<Option<(&str, bool)>> {
        if !self.started {
            self.start()?;
            // The first line (if not front matter) is already in `line`.
        } else {
            self.line.clear();
        }
        self.block.clear();
        loop {
            if self.line.is_empty() && !self.read_line()? {
                break;
            }
            if self.line.trim().is_empty() {
                self.line.clear();
                if self.block.is_empty() {
                    if self.blocks == 0 {
                        // A trace that opens with a blank line has no header block.
                        self.blocks = 1;
                    }
                    continue;
                }
                break;
            }
            self.block.push_str(&self.line);
            self.line.clear();
        }
        if self.block.is_empty() {
            return Ok(None);
        }
        let header = self.blocks == 0;
        self.blocks += 1;
        Ok(Some((&self.block, header)))
    }
}

/// Splits pushed text into blocks as it arrives (text may be cut anywhere, even inside
/// a line).
#[derive(Debug, Default)]
pub struct BlockSplitter {
    partial: String,
    line: String,
    blocks: u64,
}

impl BlockSplitter {
    /// Feed `text`; `each` gets every block completed by it (text, is header).
    pub fn push(
        &mut self,
        text: &str,
        each: &mut impl FnMut(&str, bool) -> io::Result<()>,
    ) -> io::Result<()> {
        for piece in text.split_inclusive('\n') {
            if !piece.ends_with('\n') {
                self.line.push_str(piece);
                continue;
            }
            if self.line.is_empty() {
                self.line_done(piece, each)?;
            } else {
                self.line.push_str(piece);
                let line = std::mem::take(&mut self.line);
                self.line_done(&line, each)?;
            }
        }
        Ok(())
    }

    fn line_done(
        &mut self,
        line: &str,
        each: &mut impl FnMut(&str, bool) -> io::Result<()>,
    ) -> io::Result<()> {
        if line.trim().is_empty() {
            if self.partial.is_empty() {
                if self.blocks == 0 {
                    self.blocks = 1;
                }
                return Ok(());
            }
            return self.emit(each);
        }
        self.partial.push_str(line);
        Ok(())
    }

    /// The last block, if the text did not end with a blank line.
    pub fn finish(
        &mut self,
        each: &mut impl FnMut(&str, bool) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.line.is_empty() {
            let mut line = std::mem::take(&mut self.line);
            line.push('\n');
            self.line_done(&line, each)?;
        }
        if !self.partial.is_empty() {
            self.emit(each)?;
        }
        Ok(())
    }

    fn emit(&mut self, each: &mut impl FnMut(&str, bool) -> io::Result<()>) -> io::Result<()> {
        let header = self.blocks == 0;
        self.blocks += 1;
        let r = each(&self.partial, header);
        self.partial.clear();
        r
    }
}

/// Compares a pushed trace (right) with one read from `left` as both stream; stops
/// comparing at the first difference.
#[derive(Debug)]
pub struct StreamDiff<R> {
    right: BlockSplitter,
    cmp: Compare<R>,
}

/// The left side and what the comparison found so far.
#[derive(Debug)]
struct Compare<R> {
    left: BlockReader<R>,
    ignore: Vec<String>,
    divergence: Option<Divergence>,
    identical: bool,
}

impl<R: BufRead> StreamDiff<R> {
    pub fn new(left: R, ignore: &[&str]) -> StreamDiff<R> {
        StreamDiff {
            right: BlockSplitter::default(),
            cmp: Compare {
                left: BlockReader::new(left),
                ignore: ignore.iter().map(|s| s.to_string()).collect(),
                divergence: None,
                identical: true,
            },
        }
    }

    /// Whether a difference was found (later pushes are ignored).
    pub fn diverged(&self) -> bool {
        self.cmp.divergence.is_some()
    }

    /// The next right-hand text.
    pub fn push(&mut self, text: &str) -> io::Result<()> {
        if self.diverged() {
            return Ok(());
        }
        let cmp = &mut self.cmp;
        self.right.push(text, &mut |t, h| cmp.block(t, h))
    }

    /// End of the right-hand trace: the answer, and whether every compared block was
    /// byte-identical (not only field-equal).
    pub fn finish(mut self) -> io::Result<(Option<Divergence>, bool)> {
        let cmp = &mut self.cmp;
        self.right.finish(&mut |t, h| cmp.block(t, h))?;
        cmp.left_ended()?;
        Ok((self.cmp.divergence, self.cmp.identical))
    }
}

impl<R: BufRead> Compare<R> {
    /// One right-hand block against the next kept left block.
    fn block(&mut self, text: &str, header: bool) -> io::Result<()> {
        if self.divergence.is_some() {
            return Ok(());
        }
        let ignore: Vec<&str> = self.ignore.iter().map(String::as_str).collect();
        let Some(rb) = parse_block(text, header) else {
            return Ok(());
        };
        if skipped(&rb, &ignore) {
            return Ok(());
        }
        loop {
            let Some((lt, lh)) = self.left.next_block()? else {
                self.divergence = Some(extra_event(None, Some(&rb)));
                return Ok(());
            };
            let Some(lb) = parse_block(lt, lh) else {
                continue;
            };
            if skipped(&lb, &ignore) {
                continue;
            }
            if lt != text {
                self.identical = false;
                self.divergence = compare_blocks(&lb, &rb, &ignore);
            }
            return Ok(());
        }
    }

    /// The right side ended: a kept left block still to come is a difference.
    fn left_ended(&mut self) -> io::Result<()> {
        if self.divergence.is_some() {
            return Ok(());
        }
        let ignore: Vec<&str> = self.ignore.iter().map(String::as_str).collect();
        while let Some((t, h)) = self.left.next_block()? {
            if let Some(b) = parse_block(t, h) {
                if !skipped(&b, &ignore) {
                    self.divergence = Some(extra_event(Some(&b), None));
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Which of two streamed traces a read error came from.
#[derive(Debug)]
pub enum Side {
    Left(io::Error),
    Right(io::Error),
}

/// The first difference between two traces read from `left` and `right`, as
/// [`super::diff::first_divergence`] gives it, holding one block of each at a time.
pub fn first_divergence_streams(
    left: impl BufRead,
    right: impl BufRead,
    ignore: &[&str],
) -> Result<(Option<Divergence>, bool), Side> {
    let mut diff = StreamDiff::new(left, ignore);
    let mut right = BlockReader::new(right);
    let mut text = String::new();
    while let Some((t, h)) = right.next_block().map_err(Side::Right)? {
        if diff.diverged() {
            break;
        }
        // Re-join as text with its separator, so the splitter sees the same block.
        text.clear();
        if !h {
            text.push('\n');
        }
        text.push_str(t);
        text.push('\n');
        diff.push(&text).map_err(Side::Left)?;
    }
    diff.finish().map_err(Side::Left)
}

#[cfg(test)]
#[path = "diff_stream_tests.rs"]
mod tests;
