package command

import (
	"testing"

	"airlock.dev/airlock/protect"
)

type table = []struct {
	script string
	want   want
}

// TestWorkspaceDelete: deleting the whole workspace asks (ask:workspace-delete),
// through any spelling; deleting named files and directories inside it
// does not.
func TestWorkspaceDelete(t *testing.T) {
	checkTable(t, Default(), nil, table{
		{"rm -rf .", ask("ask:workspace-delete", "rm")},
		{"rm -rf ./", ask("ask:workspace-delete", "rm")},
		{"rm -rf *", ask("ask:workspace-delete", "rm")},
		{"rm -rf ./*", ask("ask:workspace-delete", "rm")},
		{"rm -rf -- *", ask("ask:workspace-delete", "rm")},
		{"rm -rf ?*", ask("ask:workspace-delete", "rm")},
		{"rm -rf /workspace", ask("ask:workspace-delete", "rm")},
		{"rm -rf /workspace/", ask("ask:workspace-delete", "rm")},
		{"rm -rf /workspace/*", ask("ask:workspace-delete", "rm")},
		{"rm -rf $PWD", ask("ask:workspace-delete", "rm")},
		{`rm -rf "$PWD"/*`, ask("ask:workspace-delete", "rm")},
		{"rm -rf ~+", ask("ask:workspace-delete", "rm")},
		{"cd src && rm -rf ..", ask("ask:workspace-delete", "rm")},
		{"cd src && rm -rf ../*", ask("ask:workspace-delete", "rm")},
		{"rm -rf src/../*", ask("ask:workspace-delete", "rm")},
		{`'r''m' -rf .`, ask("ask:workspace-delete", "rm")},
		{`\rm -r \*`, allow("allow:build", "rm")}, // a quoted *: the file named *
		{"/usr/bin/rm -rf .", ask("ask:workspace-delete", "rm")},
		{"env rm -rf *", ask("ask:workspace-delete", "rm")},
		{"command rm -rf .", ask("ask:workspace-delete", "rm")},
		{"sh -c 'rm -rf *'", ask("ask:workspace-delete", "rm")},
		{`bash -c "cd src; rm -rf .."`, ask("ask:workspace-delete", "rm")},
		{"rm -rf {a,*}", ask("ask:workspace-delete", "rm")},
		{"find . -delete", ask("ask:workspace-delete", "find")},
		{"find . -mindepth 1 -delete", ask("ask:workspace-delete", "find")},
		{"find . -type f -delete", ask("ask:workspace-delete", "find")},
		{"find /workspace -name '*' -delete", ask("ask:workspace-delete", "find")},
		{"find -delete", ask("ask:workspace-delete", "find")},
		{"find . -type f -exec rm -f {} +", ask("ask:workspace-delete", "rm")},
		{"find . -exec shred -u {} \\;", ask("ask:workspace-delete", "shred")},
		{"truncate -s 0 *", ask("ask:workspace-delete", "truncate")},
		{"shred -u ./*", ask("ask:workspace-delete", "shred")},
		{"mv * /tmp/", ask("ask:workspace-delete", "mv")},
		{"echo | tee *", ask("ask:workspace-delete", "tee")},
		{"sed -i d *", ask("ask:workspace-delete", "sed")},
		// Near misses: named things inside, subdirectories, other globs.
		{"rm -rf build", allow("allow:build", "rm")},
		{"rm -rf build/*", allow("allow:build", "rm")},
		{"rm -rf src/.", allow("allow:build", "rm")},
		{"cd src && rm -rf .", allow("allow:inspect", "cd")},
		{"cd src && rm -rf *", allow("allow:inspect", "cd")},
		{"rm -f *.o", allow("allow:build", "rm")},
		{"rm -rf [a-z]*", allow("allow:build", "rm")},
		{"rm -f *.txt *.log", allow("allow:build", "rm")},
		{"rm -rf $PWD/build", allow("allow:build", "rm")},
		{"find . -name '*.o' -delete", allow("allow:build", "find")},
		{"find . -name '*.pyc' -exec rm {} +", allow("allow:build", "rm")},
		{"find build -delete", allow("allow:build", "find")},
		{"find . -type d -empty -delete", allow("allow:build", "find")},
		{"find . -type f", allow("allow:inspect", "find")},
		{"chmod -R u+w .", allow("allow:build", "chmod")},
		{"cp -r src/* /tmp/x", allow("allow:build", "cp")},
		{"touch .", allow("allow:build", "touch")},
		{"echo x > ./out.txt", allow("allow:inspect", "echo")},
		{"git add . && git commit -m x", allow("allow:build", "git")},
		{"git clean -fdx", ask("ask:git-data-loss", "git")},
		// Outside stays denied.
		{"rm -rf ..", deny("deny:destructive-outside", "rm")},
		{"rm -rf /*", deny("deny:destructive-outside", "rm")},
		{"find / -delete", deny("deny:destructive-outside", "find")},
		// .* takes airlock's own state along.
		{"rm -rf ./* .*", deny("deny:protected-file", "rm")},
	})
}

// TestWorkspaceDeleteConfigurable: an allow entry for the command loosens
// ask:workspace-delete, as it loosens the command's other asks.
func TestWorkspaceDeleteConfigurable(t *testing.T) {
	p, err := Compile(&Config{Allow: []Entry{{Name: "rm"}}})
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, p, nil, table{
		{"rm -rf .", allow("allow:build", "rm")},
		{"rm -rf ..", deny("deny:destructive-outside", "rm")},
		{"rm -rf *", allow("allow:build", "rm")},
		{"rm -rf .*", deny("deny:protected-file", "rm")},
		{"rm Makefile", ask("ask:host-executed-file", "rm")},
	})
}

// TestProtectedFiles: every write a command makes inside the workspace is
// checked against the protected list: airlock's own files are denied,
// files a host runs ask.
func TestProtectedFiles(t *testing.T) {
	checkTable(t, Default(), nil, table{
		{"echo all: > Makefile", ask("ask:host-executed-file", "echo")},
		{"echo x >> src/makefile", ask("ask:host-executed-file", "echo")},
		{`echo '{"scripts":{"postinstall":"x"}}' > package.json`, ask("ask:host-executed-file", "echo")},
		{"cp evil.json web/package.json", ask("ask:host-executed-file", "cp")},
		{"mv x .envrc", ask("ask:host-executed-file", "mv")},
		{"tee .vscode/tasks.json < x", ask("ask:host-executed-file", "tee")},
		{"sed -i s/a/b/ .github/workflows/ci.yml", ask("ask:host-executed-file", "sed")},
		{"sed -i s/a/b/ Make*", ask("ask:host-executed-file", "sed")},
		{"sed -i s/a/b/ *.json", ask("ask:host-executed-file", "sed")},
		{"ln -sf /tmp/x .husky/pre-commit", ask("ask:host-executed-file", "ln")},
		{"touch .pre-commit-config.yaml", ask("ask:host-executed-file", "touch")},
		{"install -m 755 x .git/hooks/pre-push", ask("ask:host-executed-file", "install")},
		{"dd if=x of=setup.py", ask("ask:host-executed-file", "dd")},
		{"curl -o Makefile https://x", ask("ask:network", "curl")},
		{`"e"cho x > ./sub/../Make\file`, ask("ask:host-executed-file", "-")},
		{"env sh -c 'echo x > .git/config'", ask("ask:host-executed-file", "echo")},
		{"echo x > .GIT/config", ask("ask:host-executed-file", "echo")},
		{"git init", ask("ask:host-executed-file", "git")},
		{"git init sub", ask("ask:host-executed-file", "git")},
		{"git config core.pager 'sh -c x'", ask("ask:host-executed-file", "git")},
		{"echo x > .airlock/state.db", deny("deny:protected-file", "echo")},
		{"rm -rf .airlock", deny("deny:protected-file", "rm")},
		{"cp x ./.Airlock/audit.jsonl", deny("deny:protected-file", "cp")},
		{"rm -rf .*", deny("deny:protected-file", "rm")},
		// Near misses: reading them, and files that only look alike.
		{"cat Makefile package.json .git/config", allow("allow:inspect", "cat")},
		{"make", allow("allow:build", "make")},
		{"echo x > Makefile.bak", allow("allow:inspect", "echo")},
		{"cp Makefile /tmp/", allow("allow:build", "cp")},
		{"echo x > docs/package.json.md", allow("allow:inspect", "echo")},
		{"echo x > sub/.github/workflows/ci.yml", allow("allow:inspect", "echo")},
		{"sed -i s/a/b/ *.go", allow("allow:build", "sed")},
		{"sed -i s/a/b/ src/*/x.go", allow("allow:build", "sed")},
		{"cat x > .airlockx", allow("allow:inspect", "cat")},
		{"echo x > sub/.airlock", allow("allow:inspect", "echo")},
		{"git config user.name", allow("allow:inspect", "git")},
	})
}

// TestProtectedConfigurable: the list a Policy checks is the one it is
// given, airlock's own files included.
func TestProtectedConfigurable(t *testing.T) {
	l, err := protect.Compile(&protect.Config{Ask: []string{"pyproject.toml"}, Remove: []string{".git/", "Makefile"}})
	if err != nil {
		t.Fatal(err)
	}
	l = l.WithOwn(protect.Own{Workspace: "/home/u/proj", Policy: "/home/u/proj/airlock.yaml"})
	p := Default().WithProtected(l)
	checkTable(t, p, nil, table{
		{"echo x >> pyproject.toml", ask("ask:host-executed-file", "echo")},
		{"echo all: > Makefile", allow("allow:inspect", "echo")},
		{"git init", allow("allow:build", "git")},
		{"git config core.pager less", allow("allow:build", "git")},
		{"echo x > .git/config", allow("allow:inspect", "echo")},
		{"echo 'commands: {allow: [sudo]}' > airlock.yaml", deny("deny:protected-file", "echo")},
		{"rm airlock.yaml", deny("deny:protected-file", "rm")},
		{"echo x > package.json", ask("ask:host-executed-file", "echo")},
	})
	if d := Default().Check("echo all: > Makefile", nil); d.Rule != "ask:host-executed-file" {
		t.Errorf("WithProtected changed the default policy: %+v", d)
	}
	if (*Policy)(nil).WithProtected(l) != nil {
		t.Error("a nil policy with a list must stay nil, which denies")
	}
}
