//! The process's place in its job, from the launcher's environment: its rank, the number of
//! ranks, and the job and step it belongs to; and its command line, as the records keep it.

use crate::sys::{env_value, EnvValue};
use aar_record::quotes::shown;
use std::sync::atomic::{AtomicI64, Ordering};

static RANK: AtomicI64 = AtomicI64::new(-1);
static NRANKS: AtomicI64 = AtomicI64::new(-1);
static LOCAL_NRANKS: AtomicI64 = AtomicI64::new(-1);

/// Variables launchers set to the rank of the process, in the order they are trusted: the MPI
/// launchers' first, Slurm's last. A launcher started inside a Slurm step or batch script (Open
/// MPI's `mpirun` in an allocation, whose daemons `srun` starts one per node) leaves every process
/// it starts with the `SLURM_PROCID` of its daemon (the node's index; 0 in the batch script) and
/// sets its own rank beside it; a process `srun` starts itself has the same rank in both.
const RANK_VARIABLES: [&str; 5] = ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "ALPS_APP_PE", "SLURM_PROCID"];

/// Variables launchers set to the number of ranks, in the same order (`SLURM_NTASKS` is then
/// the number of the daemons).
const SIZE_VARIABLES: [&str; 3] = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"];

/// Variables launchers set to the number of ranks on this node.
const LOCAL_SIZE_VARIABLES: [&str; 3] = ["MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"];

/// Variables batch systems set to the job id, in the order they are trusted.
const JOB_VARIABLES: [&str; 5] = ["SLURM_JOB_ID", "PBS_JOBID", "COBALT_JOBID", "LSB_JOBID", "JOB_ID"];

/// Variables that tell the job step (Slurm's step, or the ALPS application id).
const STEP_VARIABLES: [&str; 2] = ["SLURM_STEP_ID", "ALPS_APP_ID"];

/// The variable that tells how many times Slurm has started the job again.
const RESTART_VARIABLES: [&str; 1] = ["SLURM_RESTART_COUNT"];

/// The one parser of the launchers' numbers (ranks, numbers of ranks, restarts): a whole number,
/// blanks around it allowed.
fn number(value: &str) -> Option<u32> {
    value.trim().parse().ok()
}

/// What a list of launcher variables gave: the first that holds a valid value (a number, or the
/// text of an id), and each one set before it that does not (its value as set).
#[derive(Debug, PartialEq, Eq)]
struct Found<T = u32> {
    used: Option<(&'static str, T)>,
    bad: Vec<(&'static str, String)>,
}

impl<T> Default for Found<T> {
    fn default() -> Self {
        Self { used: None, bad: Vec::new() }
    }
}

/// The first of `variables` that `lookup` gives a number `valid` holds for. Unset, empty and blank
/// variables are passed over silently, as the `AAR_*` ones are (`export PMI_RANK=$X` with `X`
/// unset); any other value, bytes that are not UTF-8 included, is kept as bad.
fn first_number(
    variables: &[&'static str],
    lookup: &dyn Fn(&str) -> Option<EnvValue>,
    valid: fn(u32) -> bool,
) -> Found {
    let mut found = Found::default();
    for &variable in variables {
        let value = match lookup(variable) {
            None => continue,
            Some(Ok(v)) if v.trim().is_empty() => continue,
            Some(Ok(v)) => v,
            Some(Err(shown)) => {
                found.bad.push((variable, shown));
                continue;
            }
        };
        match number(&value).filter(|&n| valid(n)) {
            Some(n) => {
                found.used = Some((variable, n));
                break;
            }
            None => found.bad.push((variable, value)),
        }
    }
    found
}

/// The first of `variables` that `lookup` gives text for (a job or step id). Unset, empty and
/// blank variables are passed over silently; one that holds bytes that are not UTF-8 is kept as bad.
fn first_text(variables: &[&'static str], lookup: &dyn Fn(&str) -> Option<EnvValue>) -> Found<String> {
    let mut found = Found::default();
    for &variable in variables {
        match lookup(variable) {
            None => {}
            // Empty or blank: unset, as a number's variable is.
            Some(Ok(v)) if v.trim().is_empty() => {}
            Some(Ok(v)) => {
                found.used = Some((variable, v));
                break;
            }
            Some(Err(shown)) => found.bad.push((variable, shown)),
        }
    }
    found
}

/// What a launcher number is, for messages: its name, what a valid one is, and what the process
/// does without one.
struct Quantity {
    a: &'static str,
    name: &'static str,
    valid: &'static str,
    without: &'static str,
    /// Who sets its variables.
    set_by: &'static str,
}

const A_RANK: Quantity = Quantity {
    a: "a rank",
    name: "the rank",
    valid: "a whole number from 0",
    without: "the process has no rank: its records are named \"norank\" and it prints warnings as rank 0 does",
    set_by: "Launchers",
};

const A_LOCAL_SIZE: Quantity = Quantity {
    a: "a number of ranks on a node",
    name: "the number of ranks on this node",
    valid: "a whole number from 1",
    without: "unless PMI says how many ranks share the node, libaar.so takes this rank as alone on it and it reads \
              its own counters",
    set_by: "Launchers",
};

const A_SIZE: Quantity = Quantity {
    a: "a number of ranks",
    name: "the number of ranks",
    valid: "a whole number from 1",
    without: "the iteration record gives no number of ranks (nranks null)",
    set_by: "Launchers",
};

const A_JOB_ID: Quantity = Quantity {
    a: "a job id",
    name: "the job id",
    valid: "text; U+FFFD marks its bytes that are not UTF-8",
    without: "the process has no job id: its records and files are named \"nojob\"",
    set_by: "Batch systems",
};

const A_STEP: Quantity = Quantity {
    a: "a job step",
    name: "the job step",
    valid: "text; U+FFFD marks its bytes that are not UTF-8",
    without: "the process has no job step: its records and files are named by the job id alone",
    set_by: "Launchers",
};

const A_RESTART_COUNT: Quantity = Quantity {
    a: "a number of restarts",
    name: "the number of restarts",
    valid: "a whole number from 0",
    without: "the run is taken for the job's first (restart null in its records, no .restart<N> in their names)",
    set_by: "Slurm's daemons",
};

/// One warning per variable set to something that is not valid: the variable, its value, what
/// was used instead (`used`: a variable and its value as shown) and how to fix it.
fn warnings<T>(q: &Quantity, found: &Found<T>, show_used: fn(&T) -> String) -> Vec<String> {
    let instead = match &found.used {
        Some((variable, value)) => format!("{} is taken from {variable}={} instead", q.name, show_used(value)),
        None => q.without.to_string(),
    };
    found
        .bad
        .iter()
        .map(|(variable, value)| {
            format!(
                "{variable}={} is not {} ({}); {instead}. {} set {variable} themselves: find what sets it in \
                 the batch script, a module or a wrapper (env | grep {variable}) and unset it there.",
                shown(value),
                q.a,
                q.valid,
                q.set_by
            )
        })
        .collect()
}

/// Bytes of arguments the records keep after the program's name.
const COMMAND_LINE_BYTES: usize = 16 << 10;

/// The process's command line as the records keep it: the arguments as text, the program's name
/// and then up to [`COMMAND_LINE_BYTES`] of the others, then one element that says how many were
/// left out. A program given thousands of input files on its command line would otherwise make
/// records of megabytes, and an iteration record's header longer than a reader takes.
pub fn command_line() -> Vec<String> {
    bounded_command_line(std::env::args_os().map(|a| a.to_string_lossy().into_owned()))
}

fn bounded_command_line(args: impl Iterator<Item = String>) -> Vec<String> {
    let (mut kept, mut bytes, mut left, mut left_bytes) = (Vec::new(), 0, 0usize, 0usize);
    for (i, arg) in args.enumerate() {
        if i == 0 || (left == 0 && bytes + arg.len() <= COMMAND_LINE_BYTES) {
            bytes += if i == 0 { 0 } else { arg.len() };
            kept.push(arg);
        } else {
            left += 1;
            left_bytes += arg.len();
        }
    }
    if left > 0 {
        kept.push(format!("... ({left} more arguments, {left_bytes} bytes, not kept)"));
    }
    kept
}

/// A number in a warning.
fn plain(n: &u32) -> String {
    n.to_string()
}

/// Read the rank, the number of ranks and the ranks on this node from the launcher's environment
/// (once, at initialisation); the warnings, for variables set to something that is not a number
/// and job or step ids that are not UTF-8, are the caller's to say (after this, so that they come
/// from rank 0 only).
pub fn detect() -> Vec<String> {
    let place = place(&env_value);
    RANK.store(place.rank.used.map_or(-1, |(_, n)| i64::from(n)), Ordering::Relaxed);
    NRANKS.store(place.size.used.map_or(-1, |(_, n)| i64::from(n)), Ordering::Relaxed);
    LOCAL_NRANKS.store(place.local.used.map_or(-1, |(_, n)| i64::from(n)), Ordering::Relaxed);
    let mut said = warnings(&A_RANK, &place.rank, plain);
    said.extend(warnings(&A_SIZE, &place.size, plain));
    said.extend(warnings(&A_LOCAL_SIZE, &place.local, plain));
    said.extend(warnings(&A_JOB_ID, &first_text(&JOB_VARIABLES, &env_value), |id| shown(id)));
    said.extend(warnings(&A_STEP, &first_text(&STEP_VARIABLES, &env_value), |id| shown(id)));
    said.extend(warnings(&A_RESTART_COUNT, &first_number(&RESTART_VARIABLES, &env_value, |_| true), plain));
    said
}

/// What the launcher's variables give: the rank, the number of ranks, the ranks on the node.
struct Place {
    rank: Found,
    size: Found,
    local: Found,
}

/// The process's place from the variables `lookup` gives. Slurm's numbers of tasks are the
/// process's only when it is a task of the Slurm step: when its rank is its `SLURM_PROCID`. A
/// process that another launcher started inside the step (whose daemons are the step's tasks)
/// has a rank of its own beside its daemon's `SLURM_PROCID`, and `SLURM_NTASKS` counts the
/// daemons: the number of ranks is then one the launcher sets, or unknown. A daemon's rank 0 has
/// `SLURM_PROCID=0` too; where a PMIx server started the process, its namespace says whose it is
/// (Slurm's PMIx plugin names it `slurm.pmix.<job>.<step>`; PRRTE, `prterun-<host>-<pid>@<n>`).
fn place(lookup: &dyn Fn(&str) -> Option<EnvValue>) -> Place {
    let rank = first_number(&RANK_VARIABLES, lookup, |_| true);
    let slurm_task = match rank.used {
        None => true,
        Some((variable, n)) => {
            let pmix_of_slurm =
                lookup("PMIX_NAMESPACE").is_none_or(|v| v.is_ok_and(|ns| ns.starts_with("slurm.pmix.")));
            // Unset, empty or blank, SLURM_PROCID says nothing; any other value must be the rank.
            let procid = first_number(&["SLURM_PROCID"], lookup, |_| true);
            let procid_agrees = match procid.used {
                Some((_, p)) => p == n,
                None => procid.bad.is_empty(),
            };
            variable == "SLURM_PROCID" || (pmix_of_slurm && procid_agrees)
        }
    };
    let not_slurm = |v: &&&str| slurm_task || !v.starts_with("SLURM_");
    let sizes: Vec<&'static str> = SIZE_VARIABLES.iter().filter(not_slurm).copied().collect();
    let locals: Vec<&'static str> = LOCAL_SIZE_VARIABLES.iter().filter(not_slurm).copied().collect();
    Place { size: first_number(&sizes, lookup, |n| n > 0), local: first_number(&locals, lookup, |n| n > 0), rank }
}

/// The job's number of ranks as this process's environment gives it, and the variable that says,
/// by the rules [`detect`] follows (for the self-check: `aar doctor` weighs the job's records by it).
pub fn size_in_environment() -> Option<(&'static str, u32)> {
    place(&env_value).size.used
}

/// Ranks on this node, when the launcher's environment says ([`detect`] found; PMI's clique,
/// where the process has one, comes first: `node::ranks_per_node`).
pub fn local_nranks() -> Option<u32> {
    u32::try_from(LOCAL_NRANKS.load(Ordering::Relaxed)).ok()
}

/// The rank [`detect`] found.
pub fn rank() -> Option<u32> {
    u32::try_from(RANK.load(Ordering::Relaxed)).ok()
}

/// Rank 0, or a process launched without a rank (a serial program, a test).
pub fn is_rank0() -> bool {
    rank().is_none_or(|r| r == 0)
}

/// Ranks in the job, when the launcher says ([`detect`] found).
pub fn nranks() -> Option<u32> {
    u32::try_from(NRANKS.load(Ordering::Relaxed)).ok()
}

/// The batch system's job id.
pub fn job_id() -> Option<String> {
    first_text(&JOB_VARIABLES, &env_value).used.map(|(_, id)| id)
}

/// The job step (Slurm's step id, or the ALPS application id), when the launcher sets one.
pub fn step() -> Option<String> {
    first_text(&STEP_VARIABLES, &env_value).used.map(|(_, id)| id)
}

/// How many times Slurm has started the job again (`SLURM_RESTART_COUNT`: requeued, by `scontrol
/// requeue` or after a node failed), when it has: the run again has the job id and step ids of
/// the first, and its ranks may have the same pids (a PID namespace per step). A value that is not
/// a number counts as none ([`detect`] warns of it).
pub fn restart() -> Option<u32> {
    first_number(&RESTART_VARIABLES, &env_value, |_| true).used.map(|(_, n)| n).filter(|&n| n > 0)
}

/// What the ranks of one run (one job step) share, in their iteration records and their files'
/// names: the job and step id, or the job id alone, then `.restart<N>` in a job Slurm started
/// again; `None` without a job id.
pub fn experiment() -> Option<String> {
    Some(aar_record::run_name(&job_id()?, step().as_deref(), restart().map(u64::from)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(set: &[(&str, &str)]) -> impl Fn(&str) -> Option<EnvValue> {
        let set: Vec<(String, String)> = set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| set.iter().find(|(k, _)| k == name).map(|(_, v)| Ok(v.clone()))
    }

    fn rank(set: &[(&str, &str)]) -> (Found, Vec<String>) {
        let found = first_number(&RANK_VARIABLES, &lookup(set), |_| true);
        let said = warnings(&A_RANK, &found, plain);
        (found, said)
    }

    #[test]
    fn a_rank_variable_that_is_not_a_number_is_said_and_the_next_one_used() {
        let (found, said) = rank(&[("PMI_RANK", "abc"), ("SLURM_PROCID", "3")]);
        assert_eq!(found.used, Some(("SLURM_PROCID", 3)));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("PMI_RANK=\"abc\" is not a rank (a whole number from 0); the rank is taken from SLURM_PROCID=3 instead. ")
                && said[0].contains("unset it"),
            "{}",
            said[0]
        );
        for bad in ["-3", "1 2", "4294967296", "3.0", "0x1"] {
            let (found, said) = rank(&[("SLURM_PROCID", bad)]);
            assert_eq!((found.used, said.len()), (None, 1), "{bad}");
            assert!(said[0].contains("the process has no rank"), "{}", said[0]);
        }
        let (found, said) = rank(&[("PMI_RANK", "x"), ("PMIX_RANK", "\u{1b}[2J"), ("ALPS_APP_PE", "7")]);
        assert_eq!(found.used, Some(("ALPS_APP_PE", 7)));
        assert_eq!(said.len(), 2, "each bad variable before the one used: {said:?}");
        assert!(said[1].starts_with("PMIX_RANK=\"\\u{1b}[2J\""), "control characters shown escaped: {}", said[1]);
    }

    #[test]
    fn blank_rank_variables_are_unset_and_good_ones_after_the_used_one_are_not_read() {
        assert_eq!(
            rank(&[("PMI_RANK", ""), ("OMPI_COMM_WORLD_RANK", "  "), ("SLURM_PROCID", " 5 ")]).0.used,
            Some(("SLURM_PROCID", 5))
        );
        assert!(rank(&[("PMI_RANK", ""), ("SLURM_PROCID", "5")]).1.is_empty());
        assert_eq!(
            rank(&[("PMI_RANK", "2"), ("SLURM_PROCID", "x")]),
            (Found { used: Some(("PMI_RANK", 2)), bad: vec![] }, vec![])
        );
        let not_utf8 = |_: &str| Some(Err("a\u{fffd}b".to_string()));
        let found = first_number(&["PMI_RANK"], &not_utf8, |_| true);
        assert_eq!(found.bad, [("PMI_RANK", "a\u{fffd}b".to_string())], "bytes that are not UTF-8 are not a number");
    }

    #[test]
    fn a_job_id_that_is_not_utf8_is_said_and_the_next_one_used() {
        let set = |name: &str| match name {
            "SLURM_JOB_ID" => Some(Err("12\u{fffd}4".to_string())),
            "PBS_JOBID" => Some(Ok(String::new())),
            "COBALT_JOBID" => Some(Ok(" \t".to_string())),
            "LSB_JOBID" => Some(Ok("77".to_string())),
            _ => None,
        };
        let found = first_text(&JOB_VARIABLES, &set);
        assert_eq!(found.used, Some(("LSB_JOBID", "77".to_string())), "an empty or blank one is unset, and silent");
        let said = warnings(&A_JOB_ID, &found, |id| shown(id));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(
                "SLURM_JOB_ID=\"12\u{fffd}4\" is not a job id (text; U+FFFD marks its bytes that are not UTF-8); the job \
                 id is taken from LSB_JOBID=\"77\" instead. Batch systems set SLURM_JOB_ID themselves"
            ),
            "{}",
            said[0]
        );
        let alone = |name: &str| (name == "ALPS_APP_ID").then(|| Err("\u{fffd}".to_string()));
        let said = warnings(&A_JOB_ID, &first_text(&JOB_VARIABLES, &alone), |id| shown(id));
        assert!(said.is_empty(), "only the job's variables are read: {said:?}");
        let found = first_text(&STEP_VARIABLES, &alone);
        assert_eq!(found.used, None);
        let said = warnings(&A_STEP, &found, |id| shown(id));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("the process has no job step: its records and files are named by the job id alone"));
    }

    #[test]
    fn a_number_of_ranks_is_from_1() {
        let set = lookup(&[("PMI_SIZE", "0"), ("SLURM_NTASKS", "4")]);
        let found = first_number(&SIZE_VARIABLES, &set, |n| n > 0);
        assert_eq!(found.used, Some(("SLURM_NTASKS", 4)));
        let said = warnings(&A_SIZE, &found, plain);
        assert_eq!(said.len(), 1);
        assert!(
            said[0].starts_with(
                "PMI_SIZE=\"0\" is not a number of ranks (a whole number from 1); the number of ranks is taken from SLURM_NTASKS=4 instead."
            ),
            "{}",
            said[0]
        );
        let found = first_number(&SIZE_VARIABLES, &lookup(&[("OMPI_COMM_WORLD_SIZE", "many")]), |n| n > 0);
        assert!(warnings(&A_SIZE, &found, plain)[0].contains("no number of ranks (nranks null)"));
    }

    #[test]
    fn slurm_numbers_of_tasks_count_only_for_a_task_of_the_slurm_step() {
        let used = |set: &[(&str, &str)]| {
            let p = place(&lookup(set));
            (p.rank.used, p.size.used, p.local.used)
        };
        // srun's own task (with PMIx): the rank is its SLURM_PROCID.
        let srun = [("PMIX_RANK", "5"), ("SLURM_PROCID", "5"), ("SLURM_NTASKS", "8"), ("SLURM_NTASKS_PER_NODE", "4")];
        assert_eq!(
            used(&srun),
            (Some(("PMIX_RANK", 5)), Some(("SLURM_NTASKS", 8)), Some(("SLURM_NTASKS_PER_NODE", 4)))
        );
        // A PMIx launcher's rank 5 on the second of two daemons that srun started.
        let daemon = [("PMIX_RANK", "5"), ("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("SLURM_NTASKS_PER_NODE", "1")];
        assert_eq!(used(&daemon), (Some(("PMIX_RANK", 5)), None, None), "the daemons' numbers are not the ranks'");
        // Its rank 0 on the first daemon: the numbers agree, the PMIx namespace is not Slurm's.
        let prterun = [("PMIX_NAMESPACE", "prterun-c0-0c0s1n0-4242@1"), ("PMIX_RANK", "0"), ("SLURM_PROCID", "0")];
        let rank0 = [&prterun[..], &[("SLURM_NTASKS", "2"), ("SLURM_NTASKS_PER_NODE", "1")]].concat();
        assert_eq!(used(&rank0), (Some(("PMIX_RANK", 0)), None, None), "a daemon's rank 0 is not the step's");
        let srun_ns =
            [("PMIX_NAMESPACE", "slurm.pmix.1234.0"), ("PMIX_RANK", "0"), ("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8")];
        assert_eq!(used(&srun_ns).1, Some(("SLURM_NTASKS", 8)), "srun's PMIx names its namespace after the step");
        // Its own numbers, where it sets them, still count.
        let ompi = [
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_NTASKS_PER_NODE", "1"),
        ];
        assert_eq!(used(&ompi), (Some(("OMPI_COMM_WORLD_RANK", 5)), Some(("OMPI_COMM_WORLD_SIZE", 8)), None));
        // Slurm alone, or no rank at all: Slurm's numbers.
        assert_eq!(
            used(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")]),
            (Some(("SLURM_PROCID", 1)), Some(("SLURM_NTASKS", 2)), None)
        );
        assert_eq!(used(&[("SLURM_NTASKS", "2")]), (None, Some(("SLURM_NTASKS", 2)), None));
        // A rank without SLURM_PROCID beside it (no Slurm step): SLURM_NTASKS is passed over
        // only when a SLURM_PROCID says otherwise.
        assert_eq!(used(&[("PMI_RANK", "3"), ("SLURM_NTASKS", "4")]).1, Some(("SLURM_NTASKS", 4)));
        assert_eq!(used(&[("PMI_RANK", "3"), ("SLURM_PROCID", "x"), ("SLURM_NTASKS", "4")]).1, None);
        assert_eq!(
            used(&[("PMI_RANK", "3"), ("SLURM_PROCID", " "), ("SLURM_NTASKS", "4")]).1,
            Some(("SLURM_NTASKS", 4))
        );
    }

    #[test]
    fn the_command_line_keeps_the_program_and_16_kib_of_arguments() {
        let line = |args: &[&str]| bounded_command_line(args.iter().map(|a| a.to_string()));
        assert_eq!(line(&["./app", "-n", "4"]), ["./app", "-n", "4"]);
        let big = "x".repeat(10 << 10);
        let kept = line(&["./app", &big, "-v", &big, "input"]);
        assert_eq!(kept[..3], ["./app", big.as_str(), "-v"], "10 KiB and 2 bytes fit; another 10 KiB does not");
        assert_eq!(kept[3], format!("... (2 more arguments, {} bytes, not kept)", (10 << 10) + 5));
        assert_eq!(kept.len(), 4, "and nothing after the first left out");
        let long_name = "/".repeat(20 << 10);
        assert_eq!(line(&[&long_name]), [long_name.as_str()], "the program's name is always kept");
    }
}
