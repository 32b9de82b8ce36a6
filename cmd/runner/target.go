package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner/suggest"
)

// resolveTarget reads the NAME argument of exec and graph. A name is an
// agent or a pipeline of the project. An existing file or directory is
// loaded with the project (unless the project already holds it) and names
// what it defines: its one agent, else its one pipeline. It returns the
// paths to load and the name to run.
func resolveTarget(paths []string, arg string) ([]string, string, error) {
	if _, err := os.Stat(arg); err != nil {
		return paths, arg, nil
	}
	docs, _ := dsl.Load(arg)
	name, err := onlyTarget(arg, docs)
	if err != nil {
		return nil, "", err
	}
	if !within(arg, paths) {
		paths = append(slices.Clone(paths), arg)
	}
	return paths, name, nil
}

// onlyTarget picks the one agent, else the one pipeline, that docs define.
func onlyTarget(path string, docs []*dsl.Document) (string, error) {
	byKind := map[string][]string{}
	for _, d := range docs {
		byKind[d.Kind] = append(byKind[d.Kind], d.Name)
	}
	for _, kind := range []string{"Agent", "Pipeline"} {
		switch names := byKind[kind]; len(names) {
		case 0:
			continue
		case 1:
			return names[0], nil
		default:
			return "", fmt.Errorf("%s defines %d %ss (%s); name the one to run instead of the path",
				path, len(names), strings.ToLower(kind), strings.Join(names, ", "))
		}
	}
	return "", fmt.Errorf("%s defines no agent and no pipeline", path)
}

// within reports whether path is one of paths or inside one of them.
func within(path string, paths []string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for _, p := range paths {
		root, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// unknownTarget is the error for a name that is no agent and no pipeline
// of proj: the likely one meant, and the names there are.
func unknownTarget(proj *dsl.Project, name string) error {
	agents, pipelines := slices.Sorted(maps.Keys(proj.Agents)), slices.Sorted(maps.Keys(proj.Pipelines))
	msg := fmt.Sprintf("no agent or pipeline named %q", name)
	if hint := suggest.DidYouMean(name, append(slices.Clone(agents), pipelines...)); hint != "" {
		msg += "; " + hint
	}
	return fmt.Errorf("%s\n  agents: %s\n  pipelines: %s", msg, listOrNone(agents), listOrNone(pipelines))
}

// listOrNone joins names, or says there are none.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
