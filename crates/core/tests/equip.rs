//! Equipment (instructions bundle, MCP servers, skills, profile): each item
//! is carried to a driver that declares it, refused before launch by one
//! that does not, and the durable part guards thread resume.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use agent_adaptor_core::driver::{
    Descriptor, McpServer, McpSupport, Profile, ProfileSupport, SkillRef,
};
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::MemoryStore;
use agent_adaptor_core::{Agent, Error, InstructionsBundle, RunOptions, Runner, ThreadError};
use common::*;

fn skill(name: &str, fingerprint: &str) -> SkillRef {
    SkillRef {
        name: name.into(),
        description: format!("the {name} skill"),
        dir: PathBuf::from(format!("/skills/{name}")),
        fingerprint: fingerprint.into(),
    }
}

/// A descriptor that carries everything.
fn equipped_descriptor() -> Descriptor {
    let mut d = Descriptor::new("scripted", "Scripted");
    d.instructions = true;
    d.skills = true;
    d.mcp = McpSupport {
        stdio: true,
        http: true,
        sse: true,
        headers: true,
        bearer_token_env: true,
        tool_filter: true,
        auto_approve: true,
        strict: true,
        required: true,
    };
    d.profiles = ProfileSupport {
        dedicated: true,
        clone: true,
    };
    d
}

async fn refusal(driver: ScriptedDriver, options: RunOptions) -> Error {
    let agent = Agent::builder(driver.clone()).build().unwrap();
    let (events, outcome) = drain(agent.stream_with("q", options)).await;
    assert!(events.is_empty(), "refused before RunStarted: {events:?}");
    assert!(
        driver.recorded_requests().is_empty(),
        "the driver was called"
    );
    outcome.unwrap_err()
}

fn capability(e: &Error) -> &'static str {
    match e {
        Error::CapabilityUnsupported { capability, .. } => capability,
        other => panic!("not a capability refusal: {other:?}"),
    }
}

#[tokio::test]
async fn equipment_a_driver_does_not_declare_is_refused_before_launch() {
    let bare = || ScriptedDriver::text_reply("ok");
    let stdio = McpServer::stdio("files", "mcp-files", ["--root", "."]);
    let http = McpServer::http("docs", "https://docs.example/mcp");
    let cases: Vec<(RunOptions, &str)> = vec![
        (RunOptions::new().mcp_server(stdio.clone()), "mcp.stdio"),
        (RunOptions::new().skill(skill("review", "f1")), "skills"),
        (
            RunOptions::new().profile(Profile::Dedicated {
                root: "/profiles".into(),
            }),
            "profile.dedicated",
        ),
        (
            RunOptions::new().profile(Profile::Clone {
                root: "/profiles".into(),
            }),
            "profile.clone",
        ),
        (
            RunOptions::new().instructions_bundle(InstructionsBundle::Text("Be brief.".into())),
            "instructions",
        ),
    ];
    for (options, want) in cases {
        let e = refusal(bare(), options).await;
        assert_eq!(capability(&e), want);
    }

    // A driver that carries stdio only: every other transport and option
    // is refused by name.
    let mut d = equipped_descriptor();
    d.mcp = McpSupport {
        stdio: true,
        ..Default::default()
    };
    let stdio_only = || ScriptedDriver::text_reply("ok").with_descriptor(d.clone());
    let mut filtered = stdio.clone();
    filtered.tools.deny.insert("rm".into());
    let mut approved = stdio.clone();
    approved.tools.auto_approve.insert("read".into());
    let mut required = stdio.clone();
    required.required = true;
    let mut with_token = http.clone();
    if let agent_adaptor_core::driver::McpTransport::Http {
        bearer_token_env, ..
    } = &mut with_token.transport
    {
        *bearer_token_env = Some("DOCS_TOKEN".into());
    }
    let cases: Vec<(RunOptions, &str)> = vec![
        (RunOptions::new().mcp_server(http.clone()), "mcp.http"),
        (RunOptions::new().mcp_server(filtered), "mcp.tool_filter"),
        (RunOptions::new().mcp_server(approved), "mcp.auto_approve"),
        (RunOptions::new().mcp_server(required), "mcp.required"),
        (
            RunOptions::new().mcp_server(stdio.clone()).mcp_strict(true),
            "mcp.strict",
        ),
    ];
    for (options, want) in cases {
        assert_eq!(capability(&refusal(stdio_only(), options).await), want);
    }
    let mut d = equipped_descriptor();
    d.mcp.bearer_token_env = false;
    let e = refusal(
        ScriptedDriver::text_reply("ok").with_descriptor(d),
        RunOptions::new().mcp_server(with_token),
    )
    .await;
    assert_eq!(capability(&e), "mcp.bearer_token_env");
}

#[tokio::test]
async fn invalid_equipment_is_a_typed_error_before_launch() {
    let full = || ScriptedDriver::text_reply("ok").with_descriptor(equipped_descriptor());
    let no_command = McpServer::stdio("files", " ", Vec::<String>::new());
    match refusal(full(), RunOptions::new().mcp_server(no_command)).await {
        Error::InvalidMcpServer(e) => {
            assert_eq!(e.server, "files");
            assert!(e.reason.contains("needs a command"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let e = refusal(
        full(),
        RunOptions::new()
            .skill(skill("review", "f1"))
            .instructions_bundle(InstructionsBundle::File("/nonexistent/agents.md".into())),
    )
    .await;
    assert!(
        matches!(
            e,
            Error::InvalidOption {
                option: "instructions_bundle",
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_declaring_driver_receives_everything_merged() {
    let driver = ScriptedDriver::text_reply("ok").with_descriptor(equipped_descriptor());
    let agent = Agent::builder(driver.clone())
        .instructions_bundle(InstructionsBundle::Text("Follow the house style.".into()))
        .mcp_server(McpServer::stdio("files", "old-files", Vec::<String>::new()))
        .mcp_server(McpServer::http("docs", "https://docs.example/mcp"))
        .skill(skill("review", "f1"))
        .build()
        .unwrap();
    let options = RunOptions::new()
        .instructions("Answer in French.")
        .mcp_server(McpServer::stdio("files", "new-files", ["-v"]))
        .mcp_strict(true)
        .skill(skill("deploy", "f2"))
        .profile(Profile::Dedicated {
            root: "/profiles".into(),
        });
    agent.run_with("q", options).await.unwrap();
    let req = driver.recorded_requests().pop().unwrap();
    assert_eq!(
        req.instructions.as_deref(),
        Some("Follow the house style.\n\nAnswer in French.")
    );
    let servers: Vec<(&str, &str)> = req
        .mcp_servers
        .iter()
        .map(|s| (s.name.as_str(), s.transport.kind()))
        .collect();
    assert_eq!(servers, [("docs", "http"), ("files", "stdio")]);
    match &req.mcp_servers[1].transport {
        agent_adaptor_core::driver::McpTransport::Stdio { command, .. } => {
            assert_eq!(command, "new-files", "the call's server wins by name")
        }
        other => panic!("{other:?}"),
    }
    assert!(req.mcp_strict);
    let skills: Vec<&str> = req.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skills, ["review", "deploy"]);
    assert_eq!(
        req.profile.home("scripted"),
        Some("/profiles/scripted".into())
    );
}

#[tokio::test]
async fn a_thread_resumed_under_other_equipment_is_incompatible() {
    let store = Arc::new(MemoryStore::new());
    let driver = || {
        ScriptedDriver::resumable_reply("ok", "sess-1").with_descriptor({
            let mut d = equipped_descriptor();
            d.sessions.supports_resume = true;
            d
        })
    };
    let dedicated = Profile::Dedicated {
        root: "/profiles/a".into(),
    };
    let agent = Agent::builder(driver())
        .thread_store(store.clone())
        .profile(dedicated.clone())
        .build()
        .unwrap();
    agent.thread("t").run("one").await.unwrap();
    // The same equipment resumes; the run's own instructions do not count.
    agent
        .thread("t")
        .resume_only()
        .run_with("two", RunOptions::new().instructions("Be brief."))
        .await
        .unwrap();
    // Another profile, another bundle, another skill content: refused.
    let changes: Vec<RunOptions> = vec![
        RunOptions::new().profile(Profile::Native),
        RunOptions::new().profile(Profile::Dedicated {
            root: "/profiles/b".into(),
        }),
        RunOptions::new().instructions_bundle(InstructionsBundle::Text("New rules.".into())),
        RunOptions::new().skill(skill("review", "f1")),
        RunOptions::new().mcp_server(McpServer::stdio("files", "mcp-files", Vec::<String>::new())),
    ];
    for options in changes {
        let e = agent
            .thread("t")
            .resume_only()
            .run_with("three", options.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Thread(ThreadError::Incompatible { .. })),
            "{options:?}: {e:?}"
        );
    }
}
