//! Faults (effectful): what is done to ONE node, each with its heal. The runner journals the
//! heal before it applies the fault.

use crate::cluster::{ClusterError, DockerNodes};
use crate::spec::FaultKind;

/// A fault bound to its target.
#[derive(Debug, Clone)]
pub struct Fault {
    pub kind: FaultKind,
    pub node: String,
    pub container: String,
}

impl Fault {
    pub async fn apply(&self, docker: &DockerNodes) -> Result<(), ClusterError> {
        match self.kind {
            // Power off: SIGKILL the node container (no shutdown, no goodbye to the API server).
            FaultKind::NodeShutdown => docker.kill(&self.container).await,
        }
    }

    pub async fn heal(&self, docker: &DockerNodes) -> Result<(), ClusterError> {
        match self.kind {
            FaultKind::NodeShutdown => docker.start(&self.container).await,
        }
    }
}
