//! The functions a host lends the core, one per import of
//! `wit/world.wit`, in the order it lists them. Written by
//! `cargo run -p ctxpack-codegen`: do not edit.

/// One function the host lends: an import of the component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// `sources.retrieve`.
    Retrieve,
    /// `sources.expand-graph`.
    ExpandGraph,
    /// `sources.recall-memory`.
    RecallMemory,
    /// `sources.repository-state`.
    RepositoryState,
    /// `policy.review`.
    Review,
    /// `summarizer.summarize`.
    Summarize,
    /// `counter.count-tokens`.
    CountTokens,
    /// `counter.count-messages`.
    CountMessages,
    /// `counter.split-text`.
    SplitText,
}

impl Capability {
    /// Every capability, in the order the WIT lists them.
    pub const ALL: [Capability; 9] = [
        Capability::Retrieve,
        Capability::ExpandGraph,
        Capability::RecallMemory,
        Capability::RepositoryState,
        Capability::Review,
        Capability::Summarize,
        Capability::CountTokens,
        Capability::CountMessages,
        Capability::SplitText,
    ];

    /// Its name, the interface's and the function's: `sources.retrieve`.
    pub const fn name(self) -> &'static str {
        match self {
            Capability::Retrieve => "sources.retrieve",
            Capability::ExpandGraph => "sources.expand-graph",
            Capability::RecallMemory => "sources.recall-memory",
            Capability::RepositoryState => "sources.repository-state",
            Capability::Review => "policy.review",
            Capability::Summarize => "summarizer.summarize",
            Capability::CountTokens => "counter.count-tokens",
            Capability::CountMessages => "counter.count-messages",
            Capability::SplitText => "counter.split-text",
        }
    }

    /// The function's name alone: `retrieve`.
    pub const fn function(self) -> &'static str {
        match self {
            Capability::Retrieve => "retrieve",
            Capability::ExpandGraph => "expand-graph",
            Capability::RecallMemory => "recall-memory",
            Capability::RepositoryState => "repository-state",
            Capability::Review => "review",
            Capability::Summarize => "summarize",
            Capability::CountTokens => "count-tokens",
            Capability::CountMessages => "count-messages",
            Capability::SplitText => "split-text",
        }
    }

    /// The capability whose [`Capability::name`] or [`Capability::function`] is `name`.
    pub fn named(name: &str) -> Option<Capability> {
        Capability::ALL
            .into_iter()
            .find(|c| c.name() == name || c.function() == name)
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
