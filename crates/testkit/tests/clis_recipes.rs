//! The real-CLI recipes ([`agent_adaptor_testkit::clis`]) without the CLIs:
//! what a prepared command contains. (The real runs are in
//! `real_cli_smoke.rs`, feature `real-clis`.)

use std::fs;

use agent_adaptor_testkit::clis::{
    ACP_AGENTS, ALL, CLAUDE, COMMON_ENV, CliRecipe, DUMMY_API_KEY, GEMINI, OPENCODE, QWEN,
    ScratchDir,
};

#[test]
fn recipes_are_consistent() {
    for recipe in ALL {
        let prompts = recipe.args.iter().filter(|a| **a == "{prompt}").count();
        assert_eq!(prompts, 1, "{}", recipe.name);
        assert!(recipe.request_path.starts_with('/'), "{}", recipe.name);
        assert!(recipe.bin_var.ends_with("_BIN"), "{}", recipe.name);
    }
}

#[test]
fn command_isolates_the_environment() -> Result<(), Box<dyn std::error::Error>> {
    let home = ScratchDir::new("clis-recipes")?;
    let fake = home.path().join("fake-cli.js");
    fs::write(&fake, "")?;
    let recipe = CliRecipe {
        name: "fake",
        files: &[(
            "cfg/settings.json",
            r#"{"url":"{base_url}","model":"{model}"}"#,
        )],
        dirs: &["cfg"],
        ..GEMINI
    };
    let cmd =
        recipe.command_with_binary(&fake, "http://127.0.0.1:9/", home.path(), "hi {model}")?;
    let cmd = cmd.as_std();
    assert_eq!(cmd.get_program(), "node");
    let args: Vec<_> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(args[0], fake.to_string_lossy());
    // The prompt is passed verbatim; templates are filled.
    assert!(args.contains(&"hi {model}".to_owned()), "{args:?}");
    assert!(args.contains(&"gemini-2.5-flash".to_owned()), "{args:?}");
    let get = |k: &str| {
        cmd.get_envs()
            .find(|(key, _)| *key == k)
            .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    };
    assert_eq!(
        get("GOOGLE_GEMINI_BASE_URL").as_deref(),
        Some("http://127.0.0.1:9")
    );
    assert_eq!(
        get("HOME").as_deref(),
        Some(&*home.path().to_string_lossy())
    );
    // The environment is cleared: nothing but what the recipe sets (and PATH).
    let names: Vec<_> = cmd
        .get_envs()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n == "USER" || n == "OPENAI_API_KEY"),
        "{names:?}"
    );
    assert_eq!(cmd.get_current_dir(), Some(&*home.path().join("work")));
    assert!(home.path().join("tmp").is_dir());
    assert_eq!(
        fs::read_to_string(home.path().join("cfg/settings.json"))?,
        r#"{"url":"http://127.0.0.1:9","model":"gemini-2.5-flash"}"#
    );
    Ok(())
}

#[test]
fn missing_binary_says_how_to_install() {
    let recipe = CliRecipe {
        bin_var: "AGENT_ADAPTOR_TESTKIT_NO_SUCH_BIN_VAR",
        ..CLAUDE
    };
    let err = recipe
        .binary()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("scripts/install-clis"), "{err}");
}

#[test]
fn prepare_creates_the_home_and_expands_the_environment() -> Result<(), Box<dyn std::error::Error>>
{
    let home = ScratchDir::new("clis-prepare")?;
    let env = CLAUDE.prepare("http://127.0.0.1:9/", home.path())?;
    let get = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let home_str = home.path().to_string_lossy();
    assert_eq!(get("HOME"), Some(&*home_str));
    assert_eq!(get("ANTHROPIC_BASE_URL"), Some("http://127.0.0.1:9"));
    assert_eq!(
        get("CLAUDE_CONFIG_DIR"),
        Some(&*format!("{home_str}/.claude"))
    );
    // Common bindings first, then the recipe's own.
    assert_eq!(env[0].0, "HOME");
    assert_eq!(env.len(), COMMON_ENV.len() + CLAUDE.env.len());
    assert!(home.path().join("work").is_dir());
    assert!(home.path().join(".claude").is_dir());
    Ok(())
}

#[test]
fn acp_recipes_take_no_prompt_in_argv() {
    for recipe in ACP_AGENTS {
        assert!(
            !recipe.args.contains(&"{prompt}"),
            "{}: an ACP agent gets its prompts on stdin",
            recipe.name
        );
        assert!(recipe.request_path.starts_with('/'), "{}", recipe.name);
        assert!(recipe.bin_var.ends_with("_BIN"), "{}", recipe.name);
    }
    // One binary variable per package (CodeBuddy's one binary serves its
    // stream-json and its ACP recipe).
    let recipes = || ALL.iter().chain(&ACP_AGENTS);
    let mut pairs: Vec<_> = recipes().map(|r| (r.bin_var, r.npm_package)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let mut vars: Vec<_> = recipes().map(|r| r.bin_var).collect();
    vars.sort_unstable();
    vars.dedup();
    let mut packages: Vec<_> = recipes().map(|r| r.npm_package).collect();
    packages.sort_unstable();
    packages.dedup();
    assert_eq!(vars.len(), pairs.len(), "{pairs:?}");
    assert_eq!(packages.len(), pairs.len(), "{pairs:?}");
}

#[test]
fn acp_command_fills_the_recipe() -> Result<(), Box<dyn std::error::Error>> {
    let home = ScratchDir::new("clis-acp")?;
    let fake = home.path().join("fake-agent.js");
    fs::write(&fake, "")?;
    let cmd = QWEN.acp_command_with_binary(&fake, "http://127.0.0.1:9/", home.path())?;
    let cmd = cmd.as_std();
    assert_eq!(cmd.get_program(), "node");
    let args: Vec<_> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(args, [fake.to_string_lossy().into_owned(), "--acp".into()]);
    let get = |k: &str| {
        cmd.get_envs()
            .find(|(key, _)| *key == k)
            .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    };
    assert_eq!(
        get("OPENAI_BASE_URL").as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    assert_eq!(get("OPENAI_MODEL").as_deref(), Some(QWEN.model));
    assert_eq!(cmd.get_current_dir(), Some(&*home.path().join("work")));
    let settings: serde_json::Value = serde_json::from_str(&fs::read_to_string(
        home.path().join(".qwen/settings.json"),
    )?)?;
    assert_eq!(settings["tools"]["approvalMode"], "default");
    Ok(())
}

#[test]
fn opencode_config_names_the_mock_provider() -> Result<(), Box<dyn std::error::Error>> {
    let home = ScratchDir::new("clis-opencode")?;
    OPENCODE.prepare("http://127.0.0.1:9", home.path())?;
    let config: serde_json::Value = serde_json::from_str(&fs::read_to_string(
        home.path().join(".config/opencode/opencode.json"),
    )?)?;
    let provider = &config["provider"]["mock"];
    assert_eq!(provider["options"]["baseURL"], "http://127.0.0.1:9/v1");
    assert_eq!(provider["options"]["apiKey"], DUMMY_API_KEY);
    assert!(provider["models"][OPENCODE.model].is_object(), "{config}");
    assert_eq!(config["model"], format!("mock/{}", OPENCODE.model));
    assert_eq!(config["permission"]["bash"], "ask");
    Ok(())
}
