import ArgumentParser

/// `--config FILE` of the commands that take a configuration file (``ConfigurationFile``). The
/// file is read before the command line is parsed; the option is declared here so that the
/// command accepts it and its help explains it.
struct ConfigFileOption: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "TOML file of options, keys named like the long options (see campaign-relay config check); flags and environment variables win over it.",
            valueName: "file"))
    var path: String?
}
