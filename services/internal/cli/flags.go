package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one subcommand's command line: a flag set of the standard
// library's flag package, its synopsis and what it does. Every subcommand
// parses through one, so each answers --help (or -h) the same way: the
// synopsis, the description and every flag with its default, on stdout,
// exit 0.
type command struct {
	fs       *flag.FlagSet
	synopsis string // "switchboard serve [flags] [all | SERVICE[,SERVICE...]]"
	about    string // a paragraph: what it does, what it reads
	// flagsOf, for a command whose flags belong to its subcommands, says
	// where they are, since "Flags: none" would tell a reader there are none.
	flagsOf string
}

func newCommand(name, synopsis, about string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed by parse
	return &command{fs: fs, synopsis: synopsis, about: about}
}

// parse parses args, flags and positional arguments in any order, and
// returns the positional ones. help is true when --help was asked for; the
// usage has then been written to stdout.
func (c *command) parse(args []string, stdout io.Writer) (positional []string, help bool, err error) {
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, true, printUsage(stdout, c.synopsis, c.about, c.fs, c.flagsOf)
			}
			return nil, false, usageErr("%s: %v", c.fs.Name(), err)
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			return positional, false, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// printUsage writes a synopsis, an optional description and the flags, or
// flagsOf when the flags are its subcommands'.
func printUsage(w io.Writer, synopsis, about string, fs *flag.FlagSet, flagsOf string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", synopsis)
	if about != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(about))
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	switch {
	case hasFlags:
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	case flagsOf != "":
		fmt.Fprintf(&b, "\nFlags: %s\n", flagsOf)
	default:
		b.WriteString("\nFlags: none\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
