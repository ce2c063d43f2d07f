//! Stamps the git revision into the simulator, so that its records say what produced them, as
//! libaar.so's do.
#[path = "../../src/build/git_revision.rs"]
mod git_revision;

fn main() {
    git_revision::stamp(&[".", "../engine", "../abi"]);
}
