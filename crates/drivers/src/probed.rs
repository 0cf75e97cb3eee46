//! What the CLI drivers' probes share beyond [`crate::probe_common`]'s
//! functions: [`Probed`], what a driver gives them, and
//! [`probe_methods!`], the [`Driver`](agent_adaptor_driver::Driver)
//! methods that forward to them, written once for every driver.

use agent_adaptor_driver::ConfigSchema;

use crate::probe_common::{CliFacts, Setup};

/// A CLI driver whose probes are [`crate::probe_common`]'s: its CLI's
/// facts, what the probes read of its configuration, and its config
/// schema. Each driver implements it in its `probe.rs`, next to its facts.
pub(crate) trait Probed {
    /// The facts of the driver's CLI.
    fn facts(&self) -> &'static CliFacts;

    /// What the probes read of the driver's configuration.
    fn setup(&self) -> Setup<'_>;

    /// The fields of the driver's configuration.
    fn schema(&self) -> ConfigSchema;
}

/// The six optional probe methods of
/// [`Driver`](agent_adaptor_driver::Driver) (`check_environment`,
/// `detect_model`, `quota`, `config_schema`, `profile_report`, `skills`),
/// over the driver's [`Probed`] implementation. Used inside an
/// `impl Driver for X` block, where `X: Probed`.
macro_rules! probe_methods {
    () => {
        fn check_environment(&self) -> Option<::agent_adaptor_driver::EnvironmentReport> {
            Some($crate::probe_common::check_environment(
                $crate::probed::Probed::facts(self),
                &$crate::probed::Probed::setup(self),
            ))
        }

        fn detect_model(&self) -> Option<::agent_adaptor_driver::DetectedModel> {
            $crate::probe_common::detect_model(
                $crate::probed::Probed::facts(self),
                &$crate::probed::Probed::setup(self),
            )
        }

        fn quota(&self) -> Option<::agent_adaptor_driver::QuotaReport> {
            Some($crate::probe_common::quota($crate::probed::Probed::facts(
                self,
            )))
        }

        fn config_schema(&self) -> Option<::agent_adaptor_driver::ConfigSchema> {
            Some($crate::probed::Probed::schema(self))
        }

        fn profile_report(
            &self,
            profile: &::agent_adaptor_driver::Profile,
        ) -> Option<::agent_adaptor_driver::ProfileReport> {
            Some($crate::probe_common::profile_report(
                $crate::probed::Probed::facts(self),
                &$crate::probed::Probed::setup(self),
                &::agent_adaptor_driver::Driver::descriptor(self),
                profile,
            ))
        }

        fn skills(
            &self,
            selection: &[::agent_adaptor_driver::SkillRef],
        ) -> Option<::agent_adaptor_driver::SkillsReport> {
            $crate::probe_common::skills(
                $crate::probed::Probed::facts(self),
                &::agent_adaptor_driver::Driver::descriptor(self),
                selection,
            )
        }
    };
}
pub(crate) use probe_methods;

/// The [`Setup`] of `$config`, a CLI driver's configuration (every one
/// names these fields alike: `command`, `cwd`, `model`, `env_policy`,
/// `env`), whose documented variables are `$documented`, with no SDK
/// defaults.
macro_rules! setup_of {
    ($config:expr, $documented:expr) => {{
        let config = $config;
        $crate::probe_common::Setup {
            command: &config.command,
            cwd: config.cwd.as_deref(),
            model: config.model.as_deref(),
            env_policy: &config.env_policy,
            documented: $documented,
            defaults: &[],
            env: &config.env,
        }
    }};
}
pub(crate) use setup_of;

/// `impl Probed for $driver`, a driver of one CLI whose configuration is
/// its `config` field: its CLI's facts are `$facts`, the probes read its
/// configuration with [`setup_of!`] (documented variables `$documented`;
/// the configured model `$model`, of `config` named `$config`, where given,
/// else its `model`), and its config schema is `$schema`.
#[cfg(any(feature = "codex", feature = "cursor", feature = "gemini"))]
macro_rules! impl_probed {
    ($driver:ty, facts: $facts:expr, documented: $documented:expr, schema: $schema:expr $(,)?) => {
        $crate::probed::impl_probed!(
            $driver,
            facts: $facts,
            documented: $documented,
            schema: $schema,
            model: |config| config.model.as_deref(),
        );
    };
    (
        $driver:ty,
        facts: $facts:expr,
        documented: $documented:expr,
        schema: $schema:expr,
        model: |$config:ident| $model:expr $(,)?
    ) => {
        impl $crate::probed::Probed for $driver {
            fn facts(&self) -> &'static $crate::probe_common::CliFacts {
                $facts
            }

            fn setup(&self) -> $crate::probe_common::Setup<'_> {
                let $config = &self.config;
                $crate::probe_common::Setup {
                    model: $model,
                    ..$crate::probed::setup_of!($config, $documented)
                }
            }

            fn schema(&self) -> ::agent_adaptor_driver::ConfigSchema {
                $schema
            }
        }
    };
}
#[cfg(any(feature = "codex", feature = "cursor", feature = "gemini"))]
pub(crate) use impl_probed;

#[cfg(test)]
mod tests {
    use agent_adaptor_driver::Driver;
    use serde::Serialize;

    /// Asserts that `driver`'s config schema names every field of
    /// `config`, the configuration it was built with.
    fn assert_the_schema_names_every_field(driver: &impl Driver, config: &impl Serialize) {
        let Some(schema) = driver.config_schema() else {
            panic!("no config schema");
        };
        let value = serde_json::to_value(config).unwrap_or_default();
        for key in value.as_object().into_iter().flat_map(|o| o.keys()) {
            assert!(schema.field(key).is_some(), "no field {key:?}");
        }
    }

    #[cfg(feature = "codex")]
    #[test]
    fn codex_s_schema_names_every_field_of_its_config() {
        let config = crate::codex::Config::default();
        assert_the_schema_names_every_field(&crate::codex::driver(config.clone()), &config);
    }

    #[cfg(feature = "cursor")]
    #[test]
    fn cursor_s_schema_names_every_field_of_its_config() {
        let config = crate::cursor::Config::default();
        assert_the_schema_names_every_field(&crate::cursor::driver(config.clone()), &config);
    }

    #[cfg(feature = "gemini")]
    #[test]
    fn gemini_s_schema_names_every_field_of_its_config() {
        let config = crate::gemini::Config::default();
        assert_the_schema_names_every_field(&crate::gemini::driver(config.clone()), &config);
    }

    #[cfg(any(feature = "claude", feature = "codebuddy"))]
    #[test]
    fn each_stream_json_cli_s_schema_names_every_field_of_its_config() {
        use crate::streamjson::{CLAUDE, CODEBUDDY, Config, StreamJsonDriver};
        for family in [&CLAUDE, &CODEBUDDY] {
            let config = Config::new(family);
            let driver = StreamJsonDriver::new(family, config.clone());
            assert_the_schema_names_every_field(&driver, &config);
        }
    }
}
