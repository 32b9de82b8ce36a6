package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// skeleton is the project runner init writes.
//
//go:embed skeleton
var skeleton embed.FS

// ignored is the line init makes sure the project's .gitignore has: the
// default store's directory.
const ignored = ".runner/"

func newInit() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a runnable project: settings, a hello agent on a scripted model, and its Test",
		Long: `Init writes a project into DIR (default: the current directory, created
if missing): runner.yaml, a hello agent whose model is scripted (so it runs
with no server and no key), a Test of it, the script of replies exec uses,
and a .gitignore line for the .runner/ store. runner test and the exec
command it prints pass at once.

It writes nothing when one of its files exists, and says which; --force
overwrites them. An existing .gitignore is added to, not overwritten.`,
		Args: cobra.MaximumNArgs(1),
		RunE: runInit,
	}
	cmd.Flags().Bool("force", false, "overwrite the files that exist")
	return cmd
}

func runInit(cmd *cobra.Command, args []string) error {
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	files, err := skeletonFiles()
	if err != nil {
		return err
	}
	if force, _ := cmd.Flags().GetBool("force"); !force {
		var exist []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				exist = append(exist, f)
			}
		}
		if len(exist) > 0 {
			again := "runner init --force"
			if dir != "." {
				again = "runner init " + shellQuote(dir) + " --force"
			}
			verb := "exist"
			if len(exist) == 1 {
				verb = "exists"
			}
			return usageErr(fmt.Errorf("%s already %s in %s; nothing was written (to overwrite: %s)", strings.Join(exist, ", "), verb, dir, again))
		}
	}
	for _, f := range files {
		data, _ := skeleton.ReadFile("skeleton/" + f)
		if err := createFile(filepath.Join(dir, f), data); err != nil {
			return usageErr(err)
		}
	}
	if err := ignore(filepath.Join(dir, ".gitignore")); err != nil {
		return usageErr(err)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "wrote %s and .gitignore in %s\nnext:\n", strings.Join(files, ", "), dir)
	if dir != "." {
		fmt.Fprintf(w, "  cd %s\n", shellQuote(dir))
	}
	fmt.Fprintln(w, "  runner test")
	fmt.Fprintln(w, `  runner exec hello --input '{"name": "Ada"}' --script scripts/hello.json`)
	return nil
}

// skeletonFiles are the paths of the skeleton's files, relative to it.
func skeletonFiles() ([]string, error) {
	var files []string
	err := fs.WalkDir(skeleton, "skeleton", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, "skeleton/"))
		}
		return err
	})
	return files, err
}

// createFile writes data to name, making its directory.
func createFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}

// ignore adds the store's directory to the .gitignore at name, unless it
// has it already.
func ignore(name string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if slices.Contains(strings.Split(string(data), "\n"), ignored) {
		return nil
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		data = append(data, '\n')
	}
	return os.WriteFile(name, append(data, ignored+"\n"...), 0o644)
}
