//! Asking the API server what this client may do (effectful): one SelfSubjectAccessReview per
//! permission, so an invocation that would be refused half-way is refused before anything is
//! touched, naming each permission missing.

use crate::plan::access::Need;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

/// The permissions of `needs` this client does not have (in `needs`' order).
pub async fn missing(client: &Client, needs: &[Need]) -> Result<Vec<Need>, kube::Error> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let allowed: Vec<(usize, bool)> = futures::stream::iter(needs.iter().enumerate())
        .map(|(i, n)| {
            let api = api.clone();
            async move {
                let (resource, subresource) = match n.resource.split_once('/') {
                    Some((r, s)) => (r.to_string(), Some(s.to_string())),
                    None => (n.resource.to_string(), None),
                };
                let review = SelfSubjectAccessReview {
                    spec: SelfSubjectAccessReviewSpec {
                        resource_attributes: Some(ResourceAttributes {
                            group: Some(n.group.to_string()),
                            resource: Some(resource),
                            subresource,
                            verb: Some(n.verb.to_string()),
                            namespace: n.namespace.map(str::to_string),
                            name: n.name.map(str::to_string),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let answer = api.create(&PostParams::default(), &review).await?;
                Ok::<_, kube::Error>((i, answer.status.is_some_and(|s| s.allowed)))
            }
        })
        .buffer_unordered(8)
        .try_collect()
        .await?;
    let mut out: Vec<(usize, Need)> = allowed
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(i, _)| (i, needs[i].clone()))
        .collect();
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, n)| n).collect())
}
