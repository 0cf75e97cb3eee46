//! Deterministic workloads built from the recorded captures.
//!
//! A workload is a `.jsonl` file the testkit fake CLI replays. It is made of
//! the *shapes* of real recorded lines (`shared/fixtures/cli-captures/`):
//! every line is a recorded line with its ids, uuids, indexes and texts
//! replaced, so parsers see exactly the structure the real CLIs print, at any
//! length. The same [`Spec`] always yields the same bytes (a seeded
//! SplitMix64, no dependency on a `rand` version).
//!
//! * **Claude** (`claude/print-partial-permission-denied.jsonl`, stream-json
//!   with partial messages): `system/init`, then API messages until the
//!   target is reached — `system/status`, `message_start`, an optional
//!   thinking block (`thinking_tokens`, thinking deltas, a signature delta),
//!   a text block of token-sized text deltas, an optional `tool_use` block
//!   (`input_json_delta` pieces), each block closed by its whole `assistant`
//!   line and `content_block_stop`, `message_delta`, `message_stop`, and for
//!   a tool call the `user` line with the tool result — and the `result`
//!   line last.
//! * **Codex** (`codex/exec-tool-bypass.jsonl`, exec JSONL):
//!   `thread.started`, `turn.started`, then steps of a reasoning item, a
//!   `command_execution` started/completed pair and an `agent_message`, and
//!   `turn.completed` last.
//!
//! With [`Spec::stamp`], every Claude text delta and every Codex agent
//! message starts with `@ts={{now_ns}};`: the fake CLI replaces the
//! placeholder with the wall-clock time (ns since the Unix epoch) at which
//! it writes the line, which is how the latency bench knows when a line was
//! written.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::ordered::Json;
use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::NOW_PLACEHOLDER;
use serde::{Deserialize, Serialize};

/// The capture the Claude workloads are built from.
pub const CLAUDE_CAPTURE: &str = "claude/print-partial-permission-denied.jsonl";
/// The capture the Codex workloads are built from.
pub const CODEX_CAPTURE: &str = "codex/exec-tool-bypass.jsonl";
/// Bumped whenever the generator's output changes (cached workloads are
/// keyed by it).
pub const GENERATOR: u32 = 2;
/// The marker in front of a stamped text (see the module docs).
pub const STAMP_PREFIX: &str = "@ts=";

/// Which CLI protocol a workload speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Claude Code stream-json with partial messages.
    Claude,
    /// Codex `exec --json` JSONL.
    Codex,
}

impl Kind {
    /// `claude` or `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Claude => "claude",
            Kind::Codex => "codex",
        }
    }

    /// Parses [`Kind::as_str`].
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "claude" => Some(Kind::Claude),
            "codex" => Some(Kind::Codex),
            _ => None,
        }
    }
}

/// When generation stops (the current step is always completed, then the
/// terminal line is written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// At least this many lines.
    Lines(u64),
    /// At least this many bytes.
    Bytes(u64),
}

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The protocol.
    pub kind: Kind,
    /// The size.
    pub until: Until,
    /// The seed of the generator.
    pub seed: u64,
    /// Stamp texts with [`NOW_PLACEHOLDER`] (latency workloads).
    pub stamp: bool,
}

impl Spec {
    /// A stable file name for this spec.
    pub fn file_name(&self) -> String {
        let size = match self.until {
            Until::Lines(n) => format!("{n}l"),
            Until::Bytes(n) => format!("{n}b"),
        };
        let stamp = if self.stamp { "-stamped" } else { "" };
        format!(
            "{}-{size}-s{}{stamp}-g{GENERATOR}.jsonl",
            self.kind.as_str(),
            self.seed
        )
    }
}

/// What was generated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Lines written.
    pub lines: u64,
    /// Bytes written (newlines included).
    pub bytes: u64,
    /// Text deltas (Claude) or agent messages (Codex) written.
    pub texts: u64,
}

/// SplitMix64: small, fast, and stable forever.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    fn hex(&mut self, digits: usize) -> String {
        let mut s = String::with_capacity(digits);
        while s.len() < digits {
            s.push_str(&format!("{:016x}", self.next_u64()));
        }
        s.truncate(digits);
        s
    }

    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }

    /// `words` words of code-session prose, space separated.
    fn words(&mut self, words: u64) -> String {
        let mut s = String::new();
        for i in 0..words {
            if i > 0 {
                s.push(' ');
            }
            let w = WORDS[(self.next_u64() % WORDS.len() as u64) as usize];
            s.push_str(w);
        }
        s
    }

    /// Between `lo` and `hi` words of prose.
    fn words_in(&mut self, lo: u64, hi: u64) -> String {
        let n = self.range(lo, hi);
        self.words(n)
    }

    /// About `lo..=hi` characters of prose.
    fn text_in(&mut self, lo: u64, hi: u64) -> String {
        let n = self.range(lo, hi);
        self.text(n)
    }

    /// About `chars` characters of prose (whole words).
    fn text(&mut self, chars: u64) -> String {
        let mut s = String::with_capacity(chars as usize + 16);
        while (s.len() as u64) < chars {
            if !s.is_empty() {
                s.push(' ');
            }
            let w = WORDS[(self.next_u64() % WORDS.len() as u64) as usize];
            s.push_str(w);
        }
        s
    }
}

const WORDS: &[&str] = &[
    "the",
    "file",
    "function",
    "returns",
    "a",
    "value",
    "when",
    "test",
    "fails",
    "I",
    "will",
    "check",
    "src/lib.rs",
    "and",
    "then",
    "run",
    "cargo",
    "build",
    "error",
    "line",
    "42",
    "type",
    "mismatch",
    "expected",
    "found",
    "struct",
    "field",
    "missing",
    "let",
    "me",
    "look",
    "at",
    "the",
    "parser",
    "state",
    "machine",
    "again",
    "okay",
    "so",
    "this",
    "means",
    "we",
    "need",
    "to",
    "update",
    "Config",
    "with",
    "new",
    "option",
    "passing",
    "now",
    "\"quoted\"",
    "path/to/module.rs",
    "fn",
    "main()",
    "->",
    "Result<()>",
    "{",
    "}",
    "\\n",
    "tab\there",
    "unicode:",
    "é",
    "—",
    "✓",
];

/// Writes the workload of `spec` to `path`.
pub fn generate(spec: &Spec, path: &Path) -> io::Result<Stats> {
    let mut out = Out {
        w: BufWriter::with_capacity(1 << 20, File::create(path)?),
        stats: Stats::default(),
        until: spec.until,
    };
    let mut rng = Rng::new(spec.seed);
    match spec.kind {
        Kind::Claude => claude(&mut out, &mut rng, spec.stamp)?,
        Kind::Codex => codex(&mut out, &mut rng, spec.stamp)?,
    }
    out.w.flush()?;
    Ok(out.stats)
}

/// Generates the workload of `spec` into `dir` unless a file of the same
/// name (and its `.stats.json`) is already there; returns its path and stats.
pub fn ensure(spec: &Spec, dir: &Path) -> io::Result<(std::path::PathBuf, Stats)> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(spec.file_name());
    let stats_path = path.with_extension("stats.json");
    if path.exists()
        && let Ok(text) = std::fs::read_to_string(&stats_path)
        && let Ok(stats) = serde_json::from_str::<Stats>(&text)
        && std::fs::metadata(&path).map(|m| m.len()).ok() == Some(stats.bytes)
    {
        return Ok((path, stats));
    }
    let tmp = path.with_extension("tmp");
    let stats = generate(spec, &tmp)?;
    std::fs::rename(&tmp, &path)?;
    std::fs::write(&stats_path, serde_json::to_string(&stats)?)?;
    Ok((path, stats))
}

struct Out {
    w: BufWriter<File>,
    stats: Stats,
    until: Until,
}

impl Out {
    fn line(&mut self, v: &Json) -> io::Result<()> {
        let bytes = serde_json::to_vec(v)?;
        self.w.write_all(&bytes)?;
        self.w.write_all(b"\n")?;
        self.stats.lines += 1;
        self.stats.bytes += bytes.len() as u64 + 1;
        Ok(())
    }

    fn done(&self) -> bool {
        match self.until {
            Until::Lines(n) => self.stats.lines >= n,
            Until::Bytes(n) => self.stats.bytes >= n,
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the capture has no {what} line"),
    )
}

/// The recorded lines of `capture`, parsed.
fn capture_lines(capture: &str) -> io::Result<Vec<Json>> {
    let capture = fixtures::load(capture).map_err(io::Error::other)?;
    capture
        .stdout_lines()
        .into_iter()
        .map(|l| serde_json::from_str(l).map_err(io::Error::from))
        .collect()
}

fn find(lines: &[Json], what: &str, pred: impl Fn(&Json) -> bool) -> io::Result<Json> {
    lines
        .iter()
        .find(|v| pred(v))
        .cloned()
        .ok_or_else(|| bad(what))
}

fn s<'a>(v: &'a Json, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Json::as_str).unwrap_or("")
}

/// Sets `pointer` (which must exist) in `v`.
fn set(v: &mut Json, pointer: &str, value: Json) {
    if let Some(slot) = v.pointer_mut(pointer) {
        *slot = value;
    }
}

/// The recorded Claude line shapes.
struct ClaudeShapes {
    init: Json,
    status: Json,
    message_start: Json,
    text_start: Json,
    text_delta: Json,
    assistant_text: Json,
    block_stop: Json,
    tool_start: Json,
    json_delta: Json,
    assistant_tool: Json,
    user_result: Json,
    message_delta: Json,
    message_stop: Json,
    thinking_start: Json,
    thinking_tokens: Json,
    thinking_delta: Json,
    signature_delta: Json,
    assistant_thinking: Json,
    result: Json,
}

impl ClaudeShapes {
    fn load() -> io::Result<ClaudeShapes> {
        let l = capture_lines(CLAUDE_CAPTURE)?;
        let ev = |t: &'static str| {
            move |v: &Json| s(v, "/type") == "stream_event" && s(v, "/event/type") == t
        };
        let block = |t: &'static str| {
            move |v: &Json| {
                s(v, "/event/type") == "content_block_start"
                    && s(v, "/event/content_block/type") == t
            }
        };
        let delta = |t: &'static str| {
            move |v: &Json| {
                s(v, "/event/type") == "content_block_delta" && s(v, "/event/delta/type") == t
            }
        };
        let assistant = |t: &'static str| {
            move |v: &Json| s(v, "/type") == "assistant" && s(v, "/message/content/0/type") == t
        };
        let sys =
            |t: &'static str| move |v: &Json| s(v, "/type") == "system" && s(v, "/subtype") == t;
        Ok(ClaudeShapes {
            init: find(&l, "system/init", sys("init"))?,
            status: find(&l, "system/status", sys("status"))?,
            message_start: find(&l, "message_start", ev("message_start"))?,
            text_start: find(&l, "text block start", block("text"))?,
            text_delta: find(&l, "text_delta", delta("text_delta"))?,
            assistant_text: find(&l, "assistant text", assistant("text"))?,
            block_stop: find(&l, "content_block_stop", ev("content_block_stop"))?,
            tool_start: find(&l, "tool_use block start", block("tool_use"))?,
            json_delta: find(&l, "input_json_delta", delta("input_json_delta"))?,
            assistant_tool: find(&l, "assistant tool_use", assistant("tool_use"))?,
            user_result: find(&l, "user tool_result", |v| s(v, "/type") == "user")?,
            message_delta: find(&l, "message_delta", ev("message_delta"))?,
            message_stop: find(&l, "message_stop", ev("message_stop"))?,
            thinking_start: find(&l, "thinking block start", block("thinking"))?,
            thinking_tokens: find(&l, "system/thinking_tokens", sys("thinking_tokens"))?,
            thinking_delta: find(&l, "thinking_delta", delta("thinking_delta"))?,
            signature_delta: find(&l, "signature_delta", delta("signature_delta"))?,
            assistant_thinking: find(&l, "assistant thinking", assistant("thinking"))?,
            result: find(&l, "result", |v| s(v, "/type") == "result")?,
        })
    }
}

/// Stamps a fresh `uuid` (and the message id where the shape has one).
fn fresh(shape: &Json, rng: &mut Rng, msg: &str) -> Json {
    let mut v = shape.clone();
    set(&mut v, "/uuid", rng.uuid().into());
    set(&mut v, "/api_message_id", msg.into());
    v
}

fn claude(out: &mut Out, rng: &mut Rng, stamp: bool) -> io::Result<()> {
    let sh = ClaudeShapes::load()?;
    out.line(&sh.init)?;
    let mut steps = 0u64;
    let last_text = loop {
        steps += 1;
        let msg = format!("msg_{}", rng.hex(10));
        out.line(&fresh(&sh.status, rng, &msg))?;
        let mut start = fresh(&sh.message_start, rng, &msg);
        set(&mut start, "/event/message/id", msg.as_str().into());
        out.line(&start)?;
        let mut index = 0u64;
        let block_line = |shape: &Json, rng: &mut Rng, index: u64| {
            let mut v = fresh(shape, rng, &msg);
            set(&mut v, "/event/index", index.into());
            v
        };
        // A whole `assistant` line: the recorded one, with this message's id
        // and `fields` set in its one content block.
        let assistant = |shape: &Json, rng: &mut Rng, fields: Vec<(&str, Json)>| {
            let mut v = fresh(shape, rng, &msg);
            set(&mut v, "/message/id", msg.as_str().into());
            for (field, value) in fields {
                set(&mut v, &format!("/message/content/0/{field}"), value);
            }
            v
        };
        if rng.chance(50) {
            out.line(&block_line(&sh.thinking_start, rng, index))?;
            let mut tokens = fresh(&sh.thinking_tokens, rng, &msg);
            set(&mut tokens, "/estimated_tokens", rng.range(4, 400).into());
            out.line(&tokens)?;
            let mut thinking = String::new();
            for _ in 0..rng.range(5, 60) {
                let piece = rng.words_in(1, 12) + " ";
                thinking.push_str(&piece);
                let mut d = block_line(&sh.thinking_delta, rng, index);
                set(&mut d, "/event/delta/thinking", piece.into());
                out.line(&d)?;
            }
            let signature = rng.hex(64);
            let mut d = block_line(&sh.signature_delta, rng, index);
            set(&mut d, "/event/delta/signature", signature.as_str().into());
            out.line(&d)?;
            let fields = vec![
                ("thinking", thinking.into()),
                ("signature", signature.into()),
            ];
            out.line(&assistant(&sh.assistant_thinking, rng, fields))?;
            out.line(&block_line(&sh.block_stop, rng, index))?;
            index += 1;
        }
        out.line(&block_line(&sh.text_start, rng, index))?;
        let mut text = String::new();
        for _ in 0..rng.range(5, 60) {
            let mut piece = rng.words_in(1, 12) + " ";
            if stamp {
                piece = format!("{STAMP_PREFIX}{NOW_PLACEHOLDER};{piece}");
            }
            text.push_str(&piece);
            let mut d = block_line(&sh.text_delta, rng, index);
            set(&mut d, "/event/delta/text", piece.into());
            out.line(&d)?;
            out.stats.texts += 1;
        }
        let fields = vec![("text", text.as_str().into())];
        out.line(&assistant(&sh.assistant_text, rng, fields))?;
        out.line(&block_line(&sh.block_stop, rng, index))?;
        index += 1;
        let last = out.done();
        let tool = !last && rng.chance(60);
        if tool {
            let id = format!("toolu_{}", rng.hex(10));
            let mut begin = block_line(&sh.tool_start, rng, index);
            set(&mut begin, "/event/content_block/id", id.as_str().into());
            out.line(&begin)?;
            let command = rng.text_in(20, 300);
            let description = rng.words_in(2, 8);
            let input = Json::object([
                ("command", command.into()),
                ("description", description.into()),
            ]);
            let encoded = serde_json::to_string(&input)?;
            let pieces = rng.range(3, 10) as usize;
            let chars: Vec<char> = encoded.chars().collect();
            let per = chars.len().div_ceil(pieces).max(1);
            for chunk in chars.chunks(per) {
                let mut d = block_line(&sh.json_delta, rng, index);
                let piece: String = chunk.iter().collect();
                set(&mut d, "/event/delta/partial_json", piece.into());
                out.line(&d)?;
            }
            let fields = vec![("id", id.as_str().into()), ("input", input)];
            out.line(&assistant(&sh.assistant_tool, rng, fields))?;
            out.line(&block_line(&sh.block_stop, rng, index))?;
            let mut md = fresh(&sh.message_delta, rng, &msg);
            set(&mut md, "/event/delta/stop_reason", "tool_use".into());
            out.line(&md)?;
            out.line(&fresh(&sh.message_stop, rng, &msg))?;
            let output = rng.text_in(500, 13_000);
            let mut user = fresh(&sh.user_result, rng, &msg);
            set(
                &mut user,
                "/message/content/0/tool_use_id",
                id.as_str().into(),
            );
            set(
                &mut user,
                "/message/content/0/content",
                output.as_str().into(),
            );
            set(&mut user, "/message/content/0/is_error", false.into());
            set(&mut user, "/tool_use_result", output.into());
            set(&mut user, "/tool_result_meta/0/id", id.into());
            out.line(&user)?;
        } else {
            let mut md = fresh(&sh.message_delta, rng, &msg);
            set(&mut md, "/event/delta/stop_reason", "end_turn".into());
            out.line(&md)?;
            out.line(&fresh(&sh.message_stop, rng, &msg))?;
        }
        if last || out.done() {
            break text;
        }
    };
    let mut result = sh.result.clone();
    set(&mut result, "/uuid", rng.uuid().into());
    set(&mut result, "/num_turns", steps.into());
    set(&mut result, "/result", last_text.into());
    out.line(&result)
}

/// The recorded Codex exec line shapes.
struct CodexShapes {
    thread_started: Json,
    turn_started: Json,
    command_started: Json,
    command_completed: Json,
    reasoning: Json,
    message: Json,
    turn_completed: Json,
}

impl CodexShapes {
    fn load() -> io::Result<CodexShapes> {
        let l = capture_lines(CODEX_CAPTURE)?;
        let t = |t: &'static str| move |v: &Json| s(v, "/type") == t;
        let item = |t: &'static str, it: &'static str| {
            move |v: &Json| s(v, "/type") == t && s(v, "/item/type") == it
        };
        Ok(CodexShapes {
            thread_started: find(&l, "thread.started", t("thread.started"))?,
            turn_started: find(&l, "turn.started", t("turn.started"))?,
            command_started: find(
                &l,
                "command started",
                item("item.started", "command_execution"),
            )?,
            command_completed: find(
                &l,
                "command completed",
                item("item.completed", "command_execution"),
            )?,
            reasoning: find(&l, "reasoning", item("item.completed", "reasoning"))?,
            message: find(&l, "agent_message", item("item.completed", "agent_message"))?,
            turn_completed: find(&l, "turn.completed", t("turn.completed"))?,
        })
    }
}

fn codex(out: &mut Out, rng: &mut Rng, stamp: bool) -> io::Result<()> {
    let sh = CodexShapes::load()?;
    let mut thread = sh.thread_started.clone();
    set(&mut thread, "/thread_id", rng.uuid().into());
    out.line(&thread)?;
    out.line(&sh.turn_started)?;
    let mut item = 0u64;
    let mut next_id = || {
        item += 1;
        Json::from(format!("item_{item}"))
    };
    loop {
        if rng.chance(70) {
            let mut r = sh.reasoning.clone();
            set(&mut r, "/item/id", next_id());
            set(&mut r, "/item/text", rng.text_in(10, 100).into());
            out.line(&r)?;
        }
        if rng.chance(80) {
            let id = next_id();
            let command = format!("/bin/bash -lc '{}'", rng.words_in(2, 8));
            let mut c = sh.command_started.clone();
            set(&mut c, "/item/id", id.clone());
            set(&mut c, "/item/command", command.as_str().into());
            out.line(&c)?;
            let mut c = sh.command_completed.clone();
            set(&mut c, "/item/id", id);
            set(&mut c, "/item/command", command.into());
            let output = rng.text_in(0, 110) + "\n";
            set(&mut c, "/item/aggregated_output", output.into());
            set(&mut c, "/item/exit_code", rng.range(0, 1).into());
            out.line(&c)?;
        }
        let mut m = sh.message.clone();
        set(&mut m, "/item/id", next_id());
        let mut text = rng.text_in(10, 120);
        if stamp {
            text = format!("{STAMP_PREFIX}{NOW_PLACEHOLDER};{text}");
        }
        set(&mut m, "/item/text", text.into());
        out.line(&m)?;
        out.stats.texts += 1;
        if out.done() {
            break;
        }
    }
    out.line(&sh.turn_completed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn gen_bytes(spec: &Spec) -> (Vec<u8>, Stats) {
        let dir = std::env::temp_dir().join(format!(
            "aab-wl-{}-{}",
            std::process::id(),
            spec.file_name()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(spec.file_name());
        let stats = generate(spec, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        (bytes, stats)
    }

    #[test]
    fn deterministic_valid_json_lines_ending_with_the_terminal() {
        for kind in [Kind::Claude, Kind::Codex] {
            let spec = Spec {
                kind,
                until: Until::Lines(500),
                seed: 7,
                stamp: false,
            };
            let (a, stats) = gen_bytes(&spec);
            let (b, _) = gen_bytes(&spec);
            assert_eq!(a, b, "{kind:?} is deterministic");
            assert_eq!(stats.bytes, a.len() as u64);
            let text = String::from_utf8(a).unwrap();
            let lines: Vec<Json> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len() as u64, stats.lines);
            assert!(stats.lines >= 500);
            // The recorded key order is kept (`type` first wherever the CLI
            // prints it first: all but Claude's `result`), and the Claude
            // init line is the recorded one, byte for byte.
            let typed_first = text.lines().filter(|l| l.starts_with("{\"type\":")).count();
            assert!(typed_first + 1 >= lines.len(), "{kind:?}");
            if kind == Kind::Claude {
                let recorded = fixtures::load(CLAUDE_CAPTURE).unwrap();
                assert_eq!(
                    text.lines().next(),
                    recorded.stdout_lines().first().copied()
                );
            }
            let last = s(lines.last().unwrap(), "/type");
            let terminal = match kind {
                Kind::Claude => "result",
                Kind::Codex => "turn.completed",
            };
            assert_eq!(last, terminal);
        }
    }

    #[test]
    fn stamped_texts_carry_the_placeholder() {
        let spec = Spec {
            kind: Kind::Claude,
            until: Until::Lines(200),
            seed: 1,
            stamp: true,
        };
        let (bytes, stats) = gen_bytes(&spec);
        let text = String::from_utf8(bytes).unwrap();
        let stamped = text
            .lines()
            .filter(|l| l.contains("text_delta") && l.contains("@ts={{now_ns}};"))
            .count() as u64;
        assert_eq!(stamped, stats.texts);
    }
}
