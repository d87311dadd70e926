//! Running a check: exhaustive breadth-first search, its counts and its time.

use std::time::{Duration, Instant};

use stateright::{Checker, Model};

use crate::trace::{render, render_steps, WorldPath};
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

    /// The trace of the failed property whose name contains `name`, up to the first state
    /// that breaks it (a path the checker reports may go on past it).
    pub fn trace(&self, model: &Checked<R>, name: &str) -> Option<String> {
        let (full, path) = self.failed.iter().find(|(n, _)| n.contains(name))?;
        let property = model.properties().into_iter().find(|p| p.name == *full)?;
        let mut steps = path.as_ref()?.clone().into_vec();
        if let stateright::Expectation::Always = property.expectation {
            if let Some(first) = steps.iter().position(|(s, _)| !(property.condition)(model, s)) {
                steps.truncate(first + 1);
            }
        }
        Some(format!("property failed: {full}\n{}", render_steps(&steps)))
    }

    /// One line: states, depth, time.
    pub fn summary(&self) -> String {
        format!("{} states, depth {}, {:.1} s", self.states, self.depth, self.took.as_secs_f64())
    }
}

/// One check at a time in a process: `make test` runs the model's tests beside the fault
/// checkers, whose timing a second busy core would disturb.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Checks `recipe` exhaustively on `threads` threads (one check at a time in this process).
pub fn run<R: Recipe + Clone>(recipe: R, threads: usize) -> Outcome<R> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let model = Checked(recipe);
    let started = Instant::now();
    let checker = model.clone().checker().threads(threads).spawn_bfs().join();
    let took = started.elapsed();
    outcome(&model, &checker, took)
}

fn outcome<R: Recipe + Clone>(
    model: &Checked<R>,
    checker: &impl Checker<Checked<R>>,
    took: Duration,
) -> Outcome<R> {
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

/// Checks `recipe` as [`run`] does, prints `what` with the counts, and panics with the
/// failures' traces when a property fails: the test of a configuration that must hold.
///
/// # Panics
/// When a property fails.
pub fn assert_clean<R: Recipe + Clone>(recipe: R, threads: usize, what: &str) {
    let outcome = run(recipe.clone(), threads);
    println!("{what}: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(recipe)));
}

/// Checks `recipe` exhaustively, depth first on one thread (less memory than breadth first;
/// its traces are not the shortest).
pub fn run_dfs<R: Recipe + Clone>(recipe: R) -> Outcome<R> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let model = Checked(recipe);
    let started = Instant::now();
    let checker = model.clone().checker().spawn_dfs().join();
    let took = started.elapsed();
    outcome(&model, &checker, took)
}

/// Checks `recipe` exhaustively, depth first on one thread, one state of each class of states
/// that differ only by a permutation of interchangeable users (stateright 0.31 reduces by
/// symmetry only depth first). The depth is that of the search, not of the shortest path.
pub fn run_symmetric<R: Recipe + Clone + crate::symmetry::Symmetric>(recipe: R) -> Outcome<R> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let model = Checked(recipe);
    let started = Instant::now();
    let checker = model.clone().checker().symmetry().spawn_dfs().join();
    let took = started.elapsed();
    outcome(&model, &checker, took)
}

/// Checks `with` (a bug switched on) and `without` (the same world, switched off): the trace of
/// the counterexample to the property whose name contains `property`; an error when `with`
/// has none or `without` fails anything.
///
/// # Errors
/// What went wrong, with the failures of `without` when it had any.
pub fn contrast<R: Recipe + Clone>(with: R, without: R, property: &str) -> Result<String, String> {
    let clean = run(without.clone(), 1);
    counterexample(clean, with, without, property)
}

/// As [`contrast`], the world without the bug checked with symmetry reduction (the one with
/// it breadth first, for the shortest trace).
///
/// # Errors
/// As [`contrast`].
pub fn contrast_symmetric<R: Recipe + Clone + crate::symmetry::Symmetric>(
    with: R,
    without: R,
    property: &str,
) -> Result<String, String> {
    let clean = run_symmetric(without.clone());
    counterexample(clean, with, without, property)
}

fn counterexample<R: Recipe + Clone>(
    clean: Outcome<R>,
    with: R,
    without: R,
    property: &str,
) -> Result<String, String> {
    if !clean.failed.is_empty() {
        return Err(format!("the model without the bug fails:\n{}", clean.report(&Checked(without))));
    }
    let buggy = run(with.clone(), 1);
    buggy
        .trace(&Checked(with), property)
        .ok_or_else(|| format!("no counterexample to {property:?} with the bug ({})", buggy.summary()))
}
