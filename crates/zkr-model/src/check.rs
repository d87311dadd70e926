//! Running a check: exhaustive breadth-first search, its counts and its time.

use std::time::{Duration, Instant};

use stateright::{Checker, Model};

use crate::trace::{render, WorldPath};
use crate::world::{Checked, Recipe};

/// What a check found.
#[derive(Debug)]
pub struct Outcome<R: Recipe> {
    /// Unique states visited.
    pub states: usize,
    /// The longest path explored.
    pub depth: usize,
    /// How long it took.
    pub took: Duration,
    /// Properties that failed (an `always` with a counterexample, a `sometimes` never seen),
    /// each with its path when there is one.
    pub failed: Vec<(&'static str, Option<WorldPath<R>>)>,
}

impl<R: Recipe> Outcome<R> {
    /// The failures, each with its trace.
    pub fn report(&self, model: &Checked<R>) -> String {
        let mut out = String::new();
        for (name, path) in &self.failed {
            out.push_str(&format!("property failed: {name}\n"));
            if let Some(path) = path {
                out.push_str(&render(model, path));
            }
        }
        out
    }

    /// The failed property `name`'s trace, if it failed with one.
    pub fn counterexample(&self, name: &str) -> Option<&WorldPath<R>> {
        self.failed.iter().find(|(n, _)| n.contains(name)).and_then(|(_, p)| p.as_ref())
    }

    /// One line: states, depth, time.
    pub fn summary(&self) -> String {
        format!("{} states, depth {}, {:.1} s", self.states, self.depth, self.took.as_secs_f64())
    }
}

/// Checks `recipe` exhaustively on `threads` threads.
pub fn run<R: Recipe + Clone>(recipe: R, threads: usize) -> Outcome<R> {
    let model = Checked(recipe);
    let started = Instant::now();
    let checker = model.clone().checker().threads(threads).spawn_bfs().join();
    let took = started.elapsed();
    let mut failed = Vec::new();
    for property in model.properties() {
        let found = checker.discovery(property.name);
        let fails = match property.expectation {
            stateright::Expectation::Sometimes => found.is_none(),
            _ => found.is_some(),
        };
        if fails {
            failed.push((property.name, found));
        }
    }
    Outcome { states: checker.unique_state_count(), depth: checker.max_depth(), took, failed }
}
