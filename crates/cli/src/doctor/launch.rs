//! `aar doctor srun -n 4 ./app`: the program a launch line starts, and its number of ranks. Users
//! give the doctor the line they launch with; the program to check is the first word after the
//! launcher's options, skipping the values of those that take one.

use std::path::Path;

/// The launchers whose command lines the doctor reads, by the name of their first word.
const LAUNCHERS: [&str; 6] = ["srun", "aprun", "mpirun", "mpiexec", "mpiexec.hydra", "orterun"];

/// Slurm's srun options that take a value as the next word (written `-n 4`, not `-n4` or
/// `--ntasks=4`).
#[rustfmt::skip]
const SRUN_VALUES: &[&str] = &[
    "-A", "-B", "-c", "-C", "-d", "-D", "-e", "-G", "-i", "-J", "-L", "-m", "-M", "-n", "-N", "-o", "-p", "-q",
    "-r", "-S", "-t", "-T", "-W", "-w", "-x", "--account", "--acctg-freq", "--bb", "--begin", "--chdir",
    "--clusters", "--comment", "--constraint", "--core-spec", "--cores-per-socket", "--cpu-bind", "--cpu_bind",
    "--cpu-freq", "--cpus-per-gpu", "--cpus-per-task", "--dependency", "--distribution", "--epilog", "--error",
    "--exclude", "--export", "--extra-node-info", "--gpu-bind", "--gpus", "--gpus-per-node", "--gpus-per-socket",
    "--gpus-per-task", "--gres", "--gres-flags", "--het-group", "--hint", "--input", "--jobid", "--job-name",
    "--licenses", "--mail-type", "--mail-user", "--mem", "--mem-bind", "--mem-per-cpu", "--mem-per-gpu",
    "--mincpus", "--mpi", "--network", "--nodelist", "--nodes", "--ntasks", "--ntasks-per-core",
    "--ntasks-per-gpu", "--ntasks-per-node", "--ntasks-per-socket", "--output", "--partition", "--profile",
    "--prolog", "--qos", "--relative", "--reservation", "--signal", "--sockets-per-node", "--switches",
    "--task-epilog", "--task-prolog", "--thread-spec", "--threads", "--threads-per-core", "--time", "--time-min",
    "--tmp", "--wait", "--wckey",
];
/// The same for Cray ALPS's aprun.
#[rustfmt::skip]
const APRUN_VALUES: &[&str] = &[
    "-n", "-N", "-d", "-S", "-sl", "-sn", "-j", "-cc", "-cp", "-e", "-E", "-F", "-L", "-m", "-p", "-r", "-R", "-t",
    "-a", "-D",
];
/// The same for MPICH's Hydra and Open MPI's mpirun (`-genv NAME VALUE` and `--mca KEY VALUE`,
/// which take two, are [`value_words`]').
#[rustfmt::skip]
const MPIRUN_VALUES: &[&str] = &[
    "-n", "-np", "--np", "-c", "-N", "-ppn", "--ppn", "-npernode", "--npernode", "-npersocket", "--npersocket",
    "-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile", "-host", "--host", "-hosts", "-H", "-wdir",
    "--wdir", "-wd", "--wd", "-x", "--map-by", "--bind-to", "--rank-by", "-bind-to", "-map-by", "-binding",
    "-membind", "-rf", "--rankfile", "-am", "--am", "-tune", "--tune", "--prefix", "-path", "--path",
    "-cpus-per-proc", "--cpus-per-proc", "-cpus-per-rank", "--cpus-per-rank", "-output-filename",
    "--output-filename", "--output", "--display", "--preload-files", "--personality", "-timeout", "--timeout",
    "-configfile", "-iface", "-launcher", "-bootstrap", "-rmk", "-envlist", "-genvlist", "-outfile-pattern",
    "-errfile-pattern",
];

/// How many of the next words `launcher`'s `option` takes as its value.
fn value_words(launcher: &str, option: &str) -> usize {
    match launcher {
        "srun" => usize::from(SRUN_VALUES.contains(&option)),
        "aprun" => usize::from(APRUN_VALUES.contains(&option)),
        _ => match option {
            "-genv" | "-env" | "-mca" | "--mca" | "-gmca" | "--gmca" | "--prtemca" | "--pmixmca" => 2,
            o => usize::from(MPIRUN_VALUES.contains(&o)),
        },
    }
}

/// The options that give the number of ranks: srun's and aprun's `-n` (srun's `--ntasks`), and
/// mpirun's `-n`, `-np` (and Open MPI's `--np`, `-c`).
fn ranks_option(launcher: &str, option: &str) -> bool {
    match launcher {
        "srun" => matches!(option, "-n" | "--ntasks"),
        "aprun" => option == "-n",
        _ => matches!(option, "-n" | "-np" | "--np" | "-c"),
    }
}

/// A launch line the doctor was given in place of a program.
#[derive(Debug, PartialEq, Eq)]
pub struct LaunchLine {
    /// The launcher's name, as given (`srun`).
    pub launcher: String,
    /// The program it would start, as given (`./app`).
    pub program: String,
    /// The number of ranks its options ask for, with the launcher and option as written (`srun -n 4`).
    pub ranks: Option<(u32, String)>,
    /// Where the program's word directly follows an option the doctor does not know (`--foo` in
    /// `srun --foo bar ./app`), which may take it as its value: what the doctor did and how to
    /// put it right, said if the word names no program.
    pub after_unknown: Option<String>,
}

impl LaunchLine {
    /// The launch line `words` stands for, if its first word is a launcher's ([`LAUNCHERS`],
    /// by the file's name, so `/usr/bin/srun` too) and more words follow; `Err` when no program
    /// follows its options.
    pub fn parse(words: &[String]) -> Result<Option<LaunchLine>, String> {
        let Some(first) = words.first() else { return Ok(None) };
        let launcher = Path::new(first).file_name().map_or("", |n| n.to_str().unwrap_or(""));
        // A launcher alone is the program to check (the doctor then says what it is).
        if !LAUNCHERS.contains(&launcher) || words.len() == 1 {
            return Ok(None);
        }
        let mut ranks = None;
        // The last option's index, if the doctor does not know it to take a value (none attached).
        let mut unknown = None;
        let mut i = 1;
        while let Some(word) = words.get(i) {
            if word == "--" {
                unknown = None;
                i += 1;
                break;
            }
            if !word.starts_with('-') || word == "-" {
                break;
            }
            let (option, attached) = match word.split_once('=') {
                Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
                _ => (word.as_str(), None),
            };
            // `-n4`: the count joined to the option (srun and aprun take it so).
            let (option, attached) = match (option.strip_prefix("-n"), attached) {
                (Some(v), None) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                    ("-n", Some(v.to_string()))
                }
                (_, a) => (option, a),
            };
            let takes = if attached.is_some() { 0 } else { value_words(launcher, option) };
            unknown = (attached.is_none() && takes == 0).then_some(i);
            if ranks_option(launcher, option) {
                let value = attached.clone().or_else(|| words.get(i + 1).cloned()).unwrap_or_default();
                let written = match attached {
                    Some(_) => format!("{launcher} {word}"),
                    None => format!("{launcher} {option} {value}"),
                };
                ranks = value.parse::<u32>().ok().filter(|&n| n > 0).map(|n| (n, written));
            }
            i += 1 + takes;
        }
        match words.get(i) {
            Some(program) => Ok(Some(LaunchLine {
                launcher: launcher.to_string(),
                program: program.clone(),
                ranks,
                after_unknown: unknown.filter(|&u| u + 1 == i).and_then(|u| unknown_option_fix(launcher, words, u)),
            })),
            None => Err(format!(
                "\"{}\" names no program after {launcher}'s options; give the whole launch line \
                 (e.g. aar doctor {launcher} -n 4 ./app) or the program alone",
                words.join(" ")
            )),
        }
    }
}

/// What the doctor did with `words[option + 1]`, `launcher`'s option's next word it took as the
/// program since it does not know `words[option]` (a site's plugin, a newer launcher), and how to
/// put it right if the option takes it as its value: `--foo=bar`, or the program given alone, the
/// one found without the option and the word. None if no program is found so: the word is the
/// only one that can be the program, and the option likely takes no value (`srun --label ./app`).
fn unknown_option_fix(launcher: &str, words: &[String], option: usize) -> Option<String> {
    let (opt, word) = (&words[option], &words[option + 1]);
    let mut rest = words.to_vec();
    rest.drain(option..option + 2);
    let line = LaunchLine::parse(&rest).ok().flatten()?;
    let alone = match line.ranks {
        Some((n, _)) => format!("aar doctor --ranks {n} {}", line.program),
        None => format!("aar doctor {}", line.program),
    };
    // A short option takes no `=`, and the doctor reads none from a single-dash one.
    let joined = if opt.starts_with("--") { format!("write it {opt}={word}, or ") } else { String::new() };
    Some(format!(
        "The doctor took {word} as the program {launcher} would start: it follows {opt}, an option of \
         {launcher} the doctor does not know. If {opt} takes {word} as its value, {joined}give the program \
         alone ({alone})."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Result<Option<LaunchLine>, String> {
        LaunchLine::parse(&text.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    fn of(text: &str) -> (String, String, Option<(u32, String)>) {
        let l = line(text).unwrap().unwrap_or_else(|| panic!("{text}: no launch line"));
        (l.launcher, l.program, l.ranks)
    }

    #[test]
    fn the_program_after_the_options_and_their_values() {
        let four = |w: &str| Some((4, w.to_string()));
        for (text, launcher, ranks) in [
            ("srun -n 4 ./app --big", "srun", four("srun -n 4")),
            ("srun -n4 ./app", "srun", four("srun -n4")),
            ("srun --ntasks=4 --cpu-bind=cores ./app", "srun", four("srun --ntasks=4")),
            ("srun --ntasks 4 -N 2 --label ./app", "srun", four("srun --ntasks 4")),
            ("/usr/bin/srun -N 2 -c 8 -- ./app", "srun", None),
            ("aprun -n 4 -N 2 -d 4 -cc depth ./app", "aprun", four("aprun -n 4")),
            ("mpirun -np 4 --map-by core ./app", "mpirun", four("mpirun -np 4")),
            ("mpiexec -genv OMP_NUM_THREADS 2 -n 4 ./app", "mpiexec", four("mpiexec -n 4")),
            ("mpirun --mca btl self,vader -x PATH --oversubscribe -n 4 ./app", "mpirun", four("mpirun -n 4")),
            ("srun --gpus-per-task 1 --mem-bind local -W 30 -B 2:8 ./app", "srun", None),
            ("aprun -n 4 -E nid00012 -F exclusive -R 1 ./app", "aprun", four("aprun -n 4")),
            ("mpirun --rankfile rf -wd /tmp --prtemca plm_base_verbose 5 -np 4 ./app", "mpirun", four("mpirun -np 4")),
        ] {
            assert_eq!(of(text), (launcher.to_string(), "./app".to_string(), ranks), "{text}");
        }
    }

    #[test]
    fn a_program_that_is_no_launcher_is_no_launch_line() {
        assert_eq!(line("./app -n 4"), Ok(None));
        assert_eq!(line("/opt/srun-tools/app"), Ok(None));
        assert_eq!(line(""), Ok(None));
        assert_eq!(line("srun"), Ok(None), "a launcher alone is the program");
    }

    #[test]
    fn a_launch_line_without_a_program_or_with_a_bad_count_is_said() {
        let e = line("srun -n 4").unwrap_err();
        assert!(e.contains("\"srun -n 4\" names no program after srun's options"), "{e}");
        assert_eq!(of("srun -n 0 ./app").2, None, "no count of 0 ranks");
        assert_eq!(of("srun -n x ./app").1, "./app");
    }

    /// A word after an option the doctor does not know may be that option's value: the line
    /// keeps what to say if it names no program, with the program found without the pair.
    #[test]
    fn a_program_after_an_unknown_option_keeps_how_to_fix_it() {
        let fix = |text: &str| line(text).unwrap().unwrap().after_unknown;
        let f = fix("srun -n 4 --foo bar ./app").expect("--foo is unknown");
        assert!(
            f.contains("took bar as the program srun would start: it follows --foo, an option of srun")
                && f.contains("write it --foo=bar, or give the program alone (aar doctor --ranks 4 ./app)"),
            "{f}"
        );
        let f = fix("/usr/bin/mpirun -Q x -np 2 ./app").expect("-Q is unknown");
        assert!(
            f.contains("follows -Q, an option of mpirun")
                && f.ends_with("give the program alone (aar doctor --ranks 2 ./app)."),
            "{f}"
        );
        assert!(!f.contains("-Q="), "{f}");
        for known in ["srun -n 4 ./app", "srun --foo=bar ./app", "srun --foo -- ./app", "srun --cpu-bind cores ./app"] {
            assert_eq!(fix(known), None, "{known}");
        }
        // No other word can be the program: the option likely takes no value.
        for alone in ["srun --label ./app", "srun --foo bar --baz", "srun -n 4 --foo ./app"] {
            assert_eq!(fix(alone), None, "{alone}");
        }
    }
}
