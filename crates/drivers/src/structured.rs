//! Structured-output declarations shared by drivers whose CLI has no
//! JSON-schema option: core appends the instruction to the prompt and
//! validates the final text itself (`Request::native_output_schema` is then
//! `None`, so such a driver never sees a schema to pass on).

use agent_adaptor_driver::StructuredOutputCapability;

/// Prompt instruction plus core's validation: works on every transport,
/// since only the prompt and the final text are involved. `cli` names the
/// CLI in the notes.
pub(crate) fn prompt_only(cli: &str) -> StructuredOutputCapability {
    StructuredOutputCapability {
        json_schema_native: false,
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        works_with_hitl: true,
        notes: format!(
            "{cli} has no JSON-schema option: prompt instruction, final text validated by core"
        ),
    }
}
