//! The process's place in its job, from the launcher's environment: its rank, the number of
//! ranks, and the job and step it belongs to; and its command line, as the records keep it.

use std::sync::atomic::{AtomicI64, Ordering};

static RANK: AtomicI64 = AtomicI64::new(-1);

/// Variables launchers set to the rank of the process, in the order they are trusted: the MPI
/// launchers' first, Slurm's last. A launcher started inside a Slurm step or batch script (Open
/// MPI's `mpirun` in an allocation, whose daemons `srun` starts one per node) leaves every process
/// it starts with the `SLURM_PROCID` of its daemon (the node's index; 0 in the batch script) and
/// sets its own rank beside it; a process `srun` starts itself has the same rank in both.
const RANK_VARIABLES: [&str; 5] = ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "ALPS_APP_PE", "SLURM_PROCID"];

/// Variables launchers set to the number of ranks, in the same order (`SLURM_NTASKS` is then
/// the number of the daemons).
const SIZE_VARIABLES: [&str; 3] = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"];

/// Variables batch systems set to the job id, in the order they are trusted.
const JOB_VARIABLES: [&str; 5] = ["SLURM_JOB_ID", "PBS_JOBID", "COBALT_JOBID", "LSB_JOBID", "JOB_ID"];

/// Variables that tell the job step (Slurm's step, or the ALPS application id).
const STEP_VARIABLES: [&str; 2] = ["SLURM_STEP_ID", "ALPS_APP_ID"];

fn first_set(variables: &[&str]) -> Option<String> {
    variables.iter().find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
}

fn first_number(variables: &[&str]) -> Option<u32> {
    variables.iter().find_map(|v| std::env::var(v).ok().and_then(|s| s.trim().parse::<u32>().ok()))
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

/// Read the rank from the launcher's environment (once, at initialisation).
pub fn detect_rank() -> Option<u32> {
    let rank = first_number(&RANK_VARIABLES);
    RANK.store(rank.map_or(-1, i64::from), Ordering::Relaxed);
    rank
}

/// The rank [`detect_rank`] found.
pub fn rank() -> Option<u32> {
    u32::try_from(RANK.load(Ordering::Relaxed)).ok()
}

/// Rank 0, or a process launched without a rank (a serial program, a test).
pub fn is_rank0() -> bool {
    rank().is_none_or(|r| r == 0)
}

/// Ranks in the job, when the launcher says.
pub fn nranks() -> Option<u32> {
    first_number(&SIZE_VARIABLES)
}

/// The batch system's job id.
pub fn job_id() -> Option<String> {
    first_set(&JOB_VARIABLES)
}

/// The job step (Slurm's step id, or the ALPS application id), when the launcher sets one.
pub fn step() -> Option<String> {
    first_set(&STEP_VARIABLES)
}

/// How many times Slurm has started the job again (`SLURM_RESTART_COUNT`: requeued, by `scontrol
/// requeue` or after a node failed), when it has: the run again has the job id and step ids of
/// the first, and its ranks may have the same pids (a PID namespace per step).
pub fn restart() -> Option<u32> {
    first_number(&["SLURM_RESTART_COUNT"]).filter(|&n| n > 0)
}

/// What the ranks of one run (one job step) share, in their iteration records and their files'
/// names: the job and step id, or the job id alone, then `.restart<N>` in a job Slurm started
/// again; `None` without a job id.
pub fn experiment() -> Option<String> {
    let job = job_id()?;
    let run = match step() {
        Some(step) => format!("{job}.{step}"),
        None => job,
    };
    Some(match restart() {
        Some(n) => format!("{run}.restart{n}"),
        None => run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
