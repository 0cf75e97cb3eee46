//! The push config RPCs' wire types (A2A 1.0 ProtoJSON).

use serde::{Deserialize, Serialize};

/// `TaskPushNotificationConfig`: a webhook for one task. Its `Debug` hides
/// the token and the credentials.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskPushNotificationConfig {
    /// The tenant (unused by this server).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The config's id, unique per task (the server picks one when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The task (empty inside `SendMessage`'s configuration).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// Where deliveries are POSTed (`http` or `https`).
    pub url: String,
    /// Sent back as `X-A2A-Notification-Token` with every delivery.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// Sent as `Authorization: <scheme> <credentials>` with every delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl std::fmt::Debug for TaskPushNotificationConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskPushNotificationConfig")
            .field("id", &self.id)
            .field("task_id", &self.task_id)
            .field("token", &(!self.token.is_empty()).then_some(".."))
            .field("authentication", &self.authentication)
            .finish_non_exhaustive()
    }
}

/// `AuthenticationInfo`: how deliveries authenticate to the webhook.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthenticationInfo {
    /// An HTTP authentication scheme (`Bearer`, `Basic` …).
    pub scheme: String,
    /// The credentials for it.
    pub credentials: String,
}

impl std::fmt::Debug for AuthenticationInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthenticationInfo")
            .field("scheme", &self.scheme)
            .field("credentials", &"..")
            .finish()
    }
}

/// Params of `GetTaskPushNotificationConfig` and
/// `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskPushNotificationConfigRef {
    /// The tenant (unused).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub task_id: String,
    /// The config.
    pub id: String,
}

/// Params of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant (unused).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub task_id: String,
    /// Ignored: every config of a task fits one page.
    pub page_size: i32,
    /// Must be empty: this server returns one page.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub page_token: String,
}

/// The result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The task's configs, oldest first.
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Always empty (one page).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}
