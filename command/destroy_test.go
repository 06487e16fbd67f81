package command

import (
	"slices"
	"strings"
	"testing"
)

// workspaceFiles are the paths of the workspace the destroy tests run
// in; every other path does not exist.
var workspaceFiles = []string{
	".", "main.go", "notes.txt", "out.txt", "a.tar", "data.zip", "old.txt", "x.c", "list",
	"build", "build/app", "docs", "docs/a.md", "src", "src/x.c", "sub", "sub/x", ".git",
}

func workspaceExists(rel string) bool { return slices.Contains(workspaceFiles, rel) }

type destroyCases []struct {
	script string
	want   bool
}

// destroyTable checks Decision.Destroys for each script, with the
// workspace of workspaceFiles, and that Exists never changes the verdict.
func destroyTable(t *testing.T, tests destroyCases) {
	t.Helper()
	opts := &Options{Exists: workspaceExists}
	for _, tt := range tests {
		d := Default().Check(tt.script, opts)
		if d.Destroys != tt.want {
			t.Errorf("Check(%q).Destroys = %v, want %v (%v %s)", tt.script, d.Destroys, tt.want, d.Verdict, d.Rule)
		}
		if d.Rule == "deny:internal" {
			t.Errorf("Check(%q) panicked", tt.script)
		}
		plain := Default().Check(tt.script, nil)
		if plain.Verdict != d.Verdict || plain.Rule != d.Rule || plain.Name != d.Name {
			t.Errorf("Check(%q): Exists changed the verdict: %v %s, without %v %s", tt.script, d.Verdict, d.Rule, plain.Verdict, plain.Rule)
		}
		// Without Exists every path written over exists: never less.
		if d.Destroys && !plain.Destroys {
			t.Errorf("Check(%q): Destroys with Exists but not without", tt.script)
		}
	}
}

func TestDestroysDeletes(t *testing.T) {
	destroyTable(t, destroyCases{
		{"rm notes.txt", true},
		{"rm -rf build", true},
		{"rm -rf ./build/", true},
		{"rm -f missing.o", false},
		{"rm -rf .", true},
		{"rmdir docs", true},
		{"unlink notes.txt", true},
		{"shred -u notes.txt", true},
		{"truncate -s 0 notes.txt", true},
		{"truncate -s 10 new.bin", false},
		{"rm *.o", true},         // a glob may match files
		{"rm -f {a,b}.o", true},  // braces
		{"rm /tmp/{a,b}", false}, // scratch
		{"rm /tmp/x /dev/null", false},
		{"rm -f $f", true},       // denied, and destroys
		{"rm $(cat list)", true}, // denied, and destroys
		{"cd $d && rm x", true},  // a directory only known at run time
		{"cd sub && rm x", true},
		{"cd sub && rm y", false},
		{"cd sub; cd ..; rm notes.txt", true},
		{"mv notes.txt new.txt", true}, // the source is gone
		{"mv new.txt notes.txt", true}, // written over
		{"mv a.new b.new", false},
		{"mv -t docs a.md", true}, // docs/a.md
		{"mv -t docs b.md", false},
		{"mv -t docs new.txt", false},
		{"gzip notes.txt", true},
		{"gzip -k notes.txt", false},
		{"gzip -c notes.txt > /tmp/n.gz", false},
		{"xz old.txt", true},
		{"tar -czf /tmp/b.tgz --remove-files build", true},
		{"zip -m /tmp/d.zip notes.txt", true},
		{"find . -name '*.o' -delete", true},
		{"find build -delete", true},
		{"find /tmp -name x -delete", false},
		{"find . -name '*.o' -exec rm {} +", true},
		{"find . -name '*.o' -exec rm -f {} \\;", true},
		{"find . -type f -exec mv {} /tmp \\;", true},
		{"find . -name '*.go' -exec grep -l x {} +", false},
		{"find . -name '*.go' | xargs rm -f", true},
		{"xargs rm < list", true},
		{"rsync -a --delete src/ /tmp/dst/", true},
		{"rsync -a src/ /tmp/dst/", false},
	})
}

func TestDestroysOverwrites(t *testing.T) {
	destroyTable(t, destroyCases{
		{"> notes.txt", true},
		{": > notes.txt", true},
		{"echo x > notes.txt", true},
		{"go test ./... > out.txt", true},
		{"go test ./... > report.txt", false}, // a new file
		{"go test ./... >> out.txt", false},   // appends
		{"ls &>> out.txt", false},
		{"ls &> out.txt", true},
		{"ls >| out.txt", true},
		{"ls >& out.txt", true},
		{"ls 2> out.txt", true},
		{"ls 2>&1", false},
		{"ls > /dev/null 2>&1", false},
		{"ls > /tmp/out.txt", false},
		{"cat 3<> notes.txt", true},
		{"cat < notes.txt", false},
		{"echo x > $f", true},
		{"echo x > *.txt", true},
		{"cat > notes.txt <<EOF\nx\nEOF", true},
		{"{ echo a; echo b; } > out.txt", true},
		{"echo x | tee notes.txt", true},
		{"echo x | tee -a notes.txt", false},
		{"echo x | tee new.txt", false},
		{"dd if=/dev/zero of=notes.txt bs=1 count=1", true},
		{"dd if=/dev/zero of=notes.txt conv=notrunc", true},
		{"dd if=notes.txt of=/tmp/x", false},
		{"sort -o notes.txt notes.txt", true},
		{"sort -o sorted.txt notes.txt", false},
		{"sort notes.txt", false},
		{"uniq notes.txt out.txt", true},
		{"uniq notes.txt new.txt", false},
		{"cp main.go notes.txt", true},
		{"cp main.go new.go", false},
		{"cp -n main.go notes.txt", false},
		{"cp --update=none main.go notes.txt", false},
		{"cp x.c src/", true},
		{"cp main.go src/", false},
		{"cp src/x.c .", true},
		{"cp docs/a.md .", false},
		{"cp -a src/. build/", true},
		{"install -t build main.go", false},
		{"cp -t src x.c", true},
		{"cp main.go x.c src", true},
		{"cp main.go notes.txt /tmp", false},
		{"install -m 755 main.go build/app", true},
		{"install -d build", false},
		{"ln -sf main.go notes.txt", true},
		{"ln -s main.go notes.txt", false}, // fails: notes.txt exists
		{"ln -s main.go new.txt", false},
		{"ln -sf ../main.go", true}, // ./main.go
		{"sed -i 's/a/b/' main.go", true},
		{"sed -i.bak -e 's/a/b/' main.go", true},
		{"sed -i 's/a/b/' *.go", true},
		{"sed 's/a/b/' main.go", false},
		{"sed 's/a/b/' main.go > out.txt", true},
		{"sed 's/a/b/' main.go > new.go", false},
		{"perl -pi -e 's/a/b/' main.go", true},
		{"perl -i.bak -pe 's/x/y/' *.c", true},
		{"perl -pe 's/a/b/' main.go", false},
		{"ruby -i -pe 'x' notes.txt", true},
		{"gawk -i inplace '{print}' notes.txt", true},
		{"awk '{print}' notes.txt", false},
		{"tar -cf a.tar src", true},
		{"tar czf a.tar src", true},
		{"tar -cf new.tar src", false},
		{"tar -rf a.tar x.c", false}, // appends
		{"tar -f a.tar --delete x.c", true},
		{"tar -tf a.tar", false},
		{"tar -xf a.tar", true},
		{"tar -xf a.tar -C build", true},
		{"tar -xf a.tar -C fresh", false},
		{"tar -xkf a.tar", false},
		{"tar -xOf a.tar", false},
		{"zip data.zip x.c", true},
		{"zip new.zip x.c", false},
		{"unzip data.zip", false}, // asks before it writes over, and no one answers
		{"unzip -o data.zip", true},
		{"unzip -o -d fresh data.zip", false},
		{"find . -fprint out.txt", true},
		{"/usr/bin/time -o out.txt ls", true},
		{"/usr/bin/time -a -o out.txt ls", false},
		{"git diff --output=out.txt", true},
		{"git diff --output=new.diff", false},
		{"curl -o out.txt https://x.example/", true},
		{"curl -o new.txt https://x.example/", false},
		{"curl -O https://x.example/notes.txt", true},
		{"wget -O out.txt https://x.example/", true},
		{"wget -a out.txt https://x.example/", false},
		{"xz -f -o notes.txt old.txt", true},
	})
}

func TestDestroysGit(t *testing.T) {
	destroyTable(t, destroyCases{
		{"git clean -fdx", true},
		{"git reset --hard", true},
		{"git reset --hard HEAD~1", true},
		{"git checkout -- main.go", true},
		{"git checkout .", true},
		{"git checkout main.go", true},
		{"git checkout HEAD~1 main.go", true},
		{"git checkout feature", false}, // a branch: the changes stay
		{"git checkout -b feature", false},
		{"git checkout -b feature main.go", false},
		{"git -C sub checkout x", true},
		{"git -C sub checkout y", false},
		{"git restore main.go", true},
		{"git restore --staged main.go", false},
		{"git rm main.go", true},
		{"git rm --cached main.go", false},
		{"git rm '*.txt'", true}, // git expands the glob
		{"git rm ':/x'", true},
		{"git mv main.go app.go", true},
		{"git switch main", false},
		{"git switch -f main", true},
		{"git switch --discard-changes main", true},
		{"git apply fix.patch", true},
		{"git apply --check fix.patch", false},
		{"git stash", false},
		{"git stash drop", true},
		{"git branch -D old", true},
		{"git branch -d old", false},
		{"git tag -d v1", true},
		{"git reflog expire --expire=now --all", true},
		{"git reflog", false},
		{"git gc --prune=now", true},
		{"git gc", false},
		{"git worktree remove ../wt", true},
		{"git status && git diff && git log", false},
		{"git add . && git commit -m x", false},
	})
}

func TestDestroysInline(t *testing.T) {
	destroyTable(t, destroyCases{
		{`python3 -c "import os; os.remove('new.txt')"`, true},
		{`python3 -c "import shutil; shutil.rmtree(p)"`, true},
		{`python3 -c "import shutil; shutil.rmtree('/tmp/x')"`, false},
		{`python3 -c "open('new.txt', 'w').write('x')"`, true},
		{`python3 -c "open(p, 'wb')"`, true},
		{`python3 -c "open('notes.txt', 'r+')"`, true},
		{`python3 -c "open('log.txt', 'a').write('x')"`, false},
		{`python3 -c "open('/tmp/x', 'w')"`, false},
		{`python3 -c "print(open('notes.txt').read())"`, false},
		{`python3 -c "import json; print(json.load(open('x.json', 'r')))"`, false},
		{`python3 -c "from pathlib import Path; Path('x').unlink()"`, true},
		{`python3 -c "from pathlib import Path; Path('x').write_text('y')"`, true},
		{`python3 -c "from pathlib import Path; Path('x').open('w')"`, true},
		{`python3 -c "from pathlib import Path; print(Path('x').read_text())"`, false},
		{`python3 -c "import os; os.rename('a', 'b')"`, true},
		{`python3 -c "import os; os.makedirs('a/b')"`, false},
		{`python3 -c "import os; os.open('x', os.O_WRONLY | os.O_TRUNC)"`, true},
		{`python3 -c "import shutil; shutil.move('a', 'b')"`, true},
		{`python3 -c "$code"`, true}, // unseen
		{`python3 -c 'print(1+1)'`, false},
		{`node -e "require('fs').writeFileSync('x', 'y')"`, true},
		{`node -e "require('fs').rmSync(d, {recursive: true})"`, true},
		{`node -e "require('fs').appendFileSync('x', 'y')"`, false},
		{`node -e "console.log(require('fs').readFileSync('x', 'utf8'))"`, false},
		{`perl -e 'unlink "x"'`, true},
		{`perl -e 'open(F, ">x")'`, true},
		{`perl -e 'open(my $f, ">", $p)'`, true},
		{`perl -e 'open(F, ">>x")'`, false},
		{`perl -e 'open(F, "<x"); print <F>'`, false},
		{`ruby -e 'File.write("x", "y")'`, true},
		{`ruby -e 'puts File.read("x")'`, false},
		{`php -r 'file_put_contents("x", "y");'`, true},
		{`lua -e 'os.remove("x")'`, true},
		{`awk '{print > "out.txt"}' notes.txt`, true},
		{`awk '{print >> "out.txt"}' notes.txt`, false},
		{`awk '{print > $1 ".txt"}' notes.txt`, true},
		{`awk '$1 > 5 {print}' notes.txt`, false},
		{`python3 -c "import os; os.system('rm -f notes.txt')"`, true},
		{`python3 -c "import subprocess; subprocess.run(['rm', 'notes.txt'])"`, true},
		{`python3 -c "import subprocess; subprocess.run(['ls', '-la'])"`, false},
	})
}

func TestDestroysWrapped(t *testing.T) {
	destroyTable(t, destroyCases{
		{"env rm notes.txt", true},
		{"env -i A=1 rm notes.txt", true},
		{"env -C build rm app", true},
		{"env -C build rm notes.txt", false},
		{"nice -n 5 timeout 10 rm notes.txt", true},
		{"command rm notes.txt", true},
		{"busybox rm notes.txt", true},
		{"busybox ls", false},
		{"/bin/rm notes.txt", true},
		{`\rm notes.txt`, true},
		{"'r''m' notes.txt", true},
		{"sh -c 'rm notes.txt'", true},
		{`bash -c "echo x > notes.txt"`, true},
		{`sh -c 'sh -c "cp main.go notes.txt"'`, true},
		{"sh -c 'go build ./...'", false},
		{"f() { rm notes.txt; }; f", true},
		{"(cd build && rm app)", true},
		{"(cd build) && rm app", false},
		{"echo $(rm notes.txt)", true},
		{"diff <(rm notes.txt) x", true},
		{"true || rm notes.txt", true}, // may run
		{"if false; then > notes.txt; fi", true},
		{"xargs -I{} cp {} src/ < list", true},
		{"watch rm notes.txt", true},
		{"trap 'rm -f notes.txt' EXIT", true},
		{"trap 'rm -f /tmp/x' EXIT", false},
	})
}

func TestDestroysNot(t *testing.T) {
	destroyTable(t, destroyCases{
		{"", false},
		{"ls -la", false},
		{"cat notes.txt | grep x | sort | uniq -c", false},
		{"grep -rn TODO .", false},
		{"find . -name '*.go'", false},
		{"go build ./...", false},
		{"go build -o build/app .", false}, // a build's own output
		{"go vet ./... && go test ./...", false},
		{"gcc -o build/app x.c", false},
		{"make", false},
		{"cargo build --release", false},
		{"npm test", false},
		{"python3 main.py", false},
		{"mkdir -p build docs", false},
		{"touch notes.txt", false},
		{"chmod +x build/app", false},
		{"echo x >> notes.txt", false},
		{"diff main.go x.c > /dev/null", false},
		{"wc -l < notes.txt", false},
		{"export A=1 && echo $A", false},
		{"mkdir fresh && cp main.go fresh/ && go test ./... > fresh/out.txt", false},
		{"cp -r build backup", false},
		{"tar -xf a.tar -C fresh", false},
	})
}

// A path written over that does not exist still destroys when another
// command of the script may make a link there: ln -s notes.txt l; > l
// truncates notes.txt.
func TestDestroysThroughLinks(t *testing.T) {
	destroyTable(t, destroyCases{
		{"ln -s notes.txt l && echo x > l", true},
		{"echo x > l; ln -s notes.txt l", true}, // the order does not matter
		{"for i in 1 2; do echo x > l; ln -sf notes.txt l; done", true},
		{"ln notes.txt h; : > h", true},
		{"ln -s docs d; cp main.go d/", true},
		{"ln -s docs d; cd d; > a.md", true},
		{"ln -s sub d; rm -r d/", true},
		{"cp -r build copy && > copy/app", true},
		{"tar -xf a.tar -C fresh && > fresh/x", true},
		{"git checkout feature && echo x > l", true},
		{"ln -s notes.txt l", false},
		{"ln -s notes.txt l && cat l", false},
		{"ln -s notes.txt l && echo x >> l", false},
		{"cp -r build copy", false},
	})
}

func TestDestroysArgv(t *testing.T) {
	opts := &Options{Exists: workspaceExists}
	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"rm", "notes.txt"}, true},
		{[]string{"rm", "new.txt"}, false},
		{[]string{"sh", "-c", "echo x > notes.txt"}, true},
		{[]string{"ls", ">", "notes.txt"}, false}, // no shell: > is an argument
		{[]string{"cp", "main.go", "notes.txt"}, true},
	} {
		if d := Default().CheckArgv(tt.argv, opts); d.Destroys != tt.want {
			t.Errorf("CheckArgv(%q).Destroys = %v, want %v", tt.argv, d.Destroys, tt.want)
		}
	}
}

// Exists is asked about workspace-relative, slash-separated paths, only
// for paths inside the workspace, and at most MaxExistsCalls times.
func TestDestroysExistsCalls(t *testing.T) {
	var asked []string
	opts := &Options{Workspace: "/w", Exists: func(rel string) bool { asked = append(asked, rel); return false }}
	d := Default().Check("cp a /w/b/c; cd sub; rm ../d ./e/ /tmp/f; rm -rf /w; rm /etc/g", opts)
	want := []string{"b/c", "d", "sub/e", "."}
	if !slices.Equal(asked, want) {
		t.Errorf("Exists was asked %q, want %q", asked, want)
	}
	if d.Destroys || d.Verdict != Deny {
		t.Errorf("got %v %s Destroys=%v, want a deny for /etc/g without Destroys", d.Verdict, d.Rule, d.Destroys)
	}

	asked = nil
	var b strings.Builder
	for i := range MaxExistsCalls + 10 {
		b.WriteString("rm -f f")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString("\n")
	}
	d = Default().Check(b.String(), opts)
	if len(asked) != MaxExistsCalls {
		t.Errorf("Exists was asked %d times, want MaxExistsCalls (%d)", len(asked), MaxExistsCalls)
	}
	if !d.Destroys {
		t.Errorf("past MaxExistsCalls a path must be taken to exist: Destroys = false")
	}
}

// Without Exists, every path written over exists.
func TestDestroysWithoutExists(t *testing.T) {
	for _, s := range []string{"> new.txt", "rm -f missing.o", "cp a b", "git checkout feature", "tee x"} {
		if d := Default().Check(s, nil); !d.Destroys {
			t.Errorf("Check(%q, nil).Destroys = false, want true", s)
		}
	}
	for _, s := range []string{"ls > /dev/null", "mkdir x", "touch x", "echo >> x", "go build -o x"} {
		if d := Default().Check(s, nil); d.Destroys {
			t.Errorf("Check(%q, nil).Destroys = true, want false", s)
		}
	}
}

// TestReviewable: an ask is reviewable only when every command that asks
// does so about the workspace's own data.
func TestReviewable(t *testing.T) {
	p := Default()
	for line, want := range map[string]bool{
		"rm -rf *":                             true,
		"git clean -fdx":                       true,
		"rm -rf * && git reset --hard":         true,
		"ls":                                   false, // not an ask at all
		"rm -rf * && curl https://example.com": false,
		"curl https://example.com && rm -rf *": false,
		"python3 -c 'print(1)'":                false,
		"rm -rf /":                             false, // a deny
	} {
		if got := p.Check(line, nil).Reviewable; got != want {
			t.Errorf("%q: Reviewable = %v, want %v", line, got, want)
		}
	}
}
