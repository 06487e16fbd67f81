package redact

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"testing"

	"airlock.dev/airlock/redact/redacttest"
)

// ruleTable tries rules one at a time: each positive's «marked» spans must
// be masked by the named rule alone, with nothing else, and each near miss
// must come out untouched. Values are written out rather than generated:
// they are short, and a reader can see why each one is or is not a secret.
var ruleTable = []struct {
	rule     string
	pos, neg []string
}{
	{"private-key", []string{
		"«-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkQ3v9x0Lq2mZ8pT4sR7wX1yC6uN5aD3eF0gH2iJ4kLoAoGCCqGSM49AwEHoUQDQgAEq7Y\n-----END EC PRIVATE KEY-----»",
	}, []string{"-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEq7Y9x0Lq2mZ8pT4sR7wX1yC6uN5aD3eF0gH2iJ4kLo\n-----END PUBLIC KEY-----"}},
	{"telegram-bot-token", []string{"bot «7091846253:AAH3kd8Zq0pLm2nB4vC6xR8tY0uI2oP4aS6»"},
		[]string{"ratio 7091846253:AAH3", "7091846253:AAH3kd8Zq0pLm2nB4vC6xR8tY0uI2oP4aS6x9"}},
	{"jwt", []string{"«eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl»"}, []string{"eyJub3RoaW5nIjoxfQ.eyJzdWIiOiIxIn0.c2ln"}},
	{"bearer-token", []string{"Authorization: Bearer «k3Jd8sLq0ZxVbN7mQ2wE5rT9»"}, []string{"a bearer of this note", "Bearer aaaaaaaaaaaaaaaaaaaa"}},
	{"basic-auth", []string{"Authorization: Basic «YWxhZGRpbjpvcGVuc2VzYW1l»"}, []string{"basic authentication", "Basic dXNlcjpwYXNzd29yZA=="}},
	{"url-credential", []string{"postgres://app:«s3cr3tPw9»@db:5432/app"}, []string{"https://user@host/", "http://host:8080@x", "postgres://${U}:${P}@db/app"}},

	{"password-assignment", []string{
		"DB_PASSWORD=«Tr0ub4dor&3»",
		"  password: «c0rrect-h0rse»",
		`{"password": "«Q9v!xR2#mP»"}`,
		`{"db_pass": "«Q9v!xR2#mP»"}`,
		`smtp_pass: "«Q9v!xR2#mP»"`,
		`dbPass = "«Q9v!xR2#mP»"`,
		"SSHPASS=«Q9v!xR2#mP» sshpass -e ssh host",
		`var dbPassword = "«Q9v!xR2#mP»"`,
		`    password: str = "«Q9v!xR2#mP»"`,
		`cfg := Config{User: "app", Password: "«Q9v!xR2#mP»"}`,
		`conn = connect(host="db", password="«Q9v!xR2#mP»")`,
		`{"password": "«ab\"cd12»"}`,
		"jdbc:mysql://db:3306/app?user=app&password=«Q9vxR2mP»&ssl=true",
		"jdbc:sqlserver://db:1433;user=sa;password=«Q9vxR2mP»;encrypt=true",
		"Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=«Q9vxR2mP»;",
		"Driver={PostgreSQL};Uid=sa;Pwd={«Q9v;xR2mP»};",
		"Server=db;Database=app;User Id=sa;Password=«Q9vxR2mP»;",
		`mysql --password="«pGx7 Kq2»" app`,
	}, []string{
		`password = input("Password: ")`, "password = getpass.getpass()", `passwordField = "Password"`,
		`password = "changeme"`, "password: ${DB_PASSWORD}", "password=password", "self.password = password",
		"PASSWORD_MIN_LENGTH = 12", `errors.password = "Password is too short"`, `{"passwordHint": "Your first pet"}`,
		`{"passwordPlaceholder": "Enter password"}`, `{"bypass": "enabled", "compass": "north-east"}`,
		`pass_through: enabled`, "passes: 3", "Second pass: find repeats", "for _, pass := range passes {",
		"for _, dbPass := range passes {", "self.user, self.password = user, password", "self.passwd = password_mgr",
		"const readPasswords = async () => {", `raise TypeError("pwd: expected bytes, got %s")`, "userid = passwd = acct = ''", "password_reset_url: https://auth.internal/reset",
		"let passwordRegex = /^(?=.*[A-Z]).{8,}$/;", "password: str", "Server=db;Password=;", `password={password}`,
		"jdbc:mysql://db/app?user=app&password=${DB_PASSWORD}", `PasswordPolicy: "Strong"`,
	}},
	{"password-flag", []string{"psql --password «pGx7Kq2mZw» -h db", `psql --password "«pGx7 Kq2»" -h db`},
		[]string{"mysql --password app", "--password $PW", "--password-file /run/pw"}},
	{"secret-assignment", []string{
		"CLIENT_SECRET=«dG9rZW4tMTIzNDU2Nzg5MGFiY2Rl»",
		`API_KEY = "«aB3dE5gH7jK9mN1pQ3rS5tU7»"`,
		`const secretToken = '«aB3dE5gH7jK9mN1pQ3rS5tU7»';`,
		`  private readonly apiKey: string = "«aB3dE5gH7jK9mN1pQ3rS5tU7»";`,
		`    @client_secret = "«aB3dE5gH7jK9mN1pQ3rS5tU7»"`,
		`	apiKey := "«aB3dE5gH7jK9mN1pQ3rS5tU7»"`,
		`var authToken string = "«aB3dE5gH7jK9mN1pQ3rS5tU7»"`,
		`os.environ["API_TOKEN"] = "«aB3dE5gH7jK9mN1pQ3rS5tU7»"`,
		`headers = {"X-Api-Key": "«aB3dE5gH7jK9mN1pQ3rS5tU7»"}`,
		`"refresh_token": "«1//0gAb3dE5gH7jK9mN1pQ3rS5tU7»",`,
	}, []string{
		"token = None", `secret = os.environ["X"]`, `token = "<your-token>"`, "api_key = settings.API_KEY",
		`const tokenKey = "auth_token";`, `secretName: "db-credentials",`, "apiKey: string;", "self.token = token",
		`assert resp.json()["token"] == expected_token`, "max_tokens = 4096", `token_type: "Bearer"`,
		`"client_id": "123456789012.apps.googleusercontent.com"`, `secretKeyRef: {name: db, key: password}`,
		`tokenUrl = "https://auth.internal/token/v2/abc123"`, `apiKeyId = "AK12345678"`,
		"tokens = 2*maxConcurrency + minTokens*cfg.BuildP", "error_per_key = 100000.0/first_set_max_id",
		"SIOCGLIFTOKEN = -0x3f879678",
	}},
	{"secret-flag", []string{"./deploy --token «aB3dE5gH7jK9mN1pQ3rS5» --env prod"}, []string{"--token $TOKEN", "--token-file ./tok"}},
	{"password-element", []string{
		"<password>«Q9vxR2mP»</password>", "  <Password>«Q9vxR2mP»</Password>", "<jdbc.password>«Q9vxR2mP»</jdbc.password>",
		"<password><![CDATA[«Q9vxR2mP»]]></password>", `<ns:password xsi:type="string">«Q9vxR2mP»</ns:password>`,
	}, []string{
		"<password>${DB_PASSWORD}</password>", "<password></password>", "<PasswordPolicy>Strong</PasswordPolicy>",
		"</password>abcdefgh", "<passwordLength>12</passwordLength>", "<password>changeme</password>",
		`<label for="password">Password</label>`,
	}},
	{"secret-element", []string{"<client_secret>«aB3dE5gH7jK9mN1pQ3rS5»</client_secret>", "<apiKey>«aB3dE5gH7jK9mN1pQ3rS5»</apiKey>"},
		[]string{"<token_url>https://auth/token</token_url>", "<secret>mysecret</secret>", "<tokenType>Bearer</tokenType>"}},
	{"password-attribute", []string{
		`<add key="Password" value="«Q9vxR2mP»" />`, `<property name="password" value="«Q9vxR2mP»"/>`, `<add key='db.password' value='«Q9vxR2mP»'/>`,
	}, []string{
		`<add key="PasswordLength" value="12"/>`, `<add key="PasswordRequired" value="true"/>`,
		`<xs:element name="password" type="xs:string"/>`, `<input type="password" name="password" placeholder="Password">`,
		`<add key="Password" value="$(DbPassword)"/>`,
	}},
	{"password-attribute-text", []string{`<entry key="db.password">«Q9vxR2mP»</entry>`}, []string{`<entry key="db.password.min">8</entry>`, `<entry key="db.password"></entry>`}},
	{"secret-attribute", []string{`<add key="StripeApiKey" value="«aB3dE5gH7jK9mN1pQ3rS5»"/>`}, []string{`<add key="ApiKeyHeader" value="X-Api-Key"/>`, `<add key="TokenLifetime" value="3600"/>`}},
	{"oracle-thin", []string{"jdbc:oracle:thin:scott/«Q9vxR2mP»@//db:1521/ORCL"}, []string{"jdbc:oracle:thin:@//db:1521/ORCL", "jdbc:oracle:thin:scott@db"}},
	{"private-key-id", []string{`"private_key_id": "«8f2b9c1d7e6a5f4b3c2d1e0f9a8b7c6d5e4f3a2b»",`, "private_key_id = «8f2b9c1d7e6a5f4b3c2d1e0f9a8b7c6d5e4f3a2b»"},
		[]string{`"private_key_id": "8f2b9c1d"`, `"key_id": "8f2b9c1d7e6a5f4b3c2d1e0f9a8b7c6d5e4f3a2b"`, `"private_key_id": "8f2b9c1d7e6a5f4b3c2d1e0f9a8b7c6d5e4f3a2b0"`}},
	{"aws-secret-key-near-id", []string{
		"key AKIAQWERTYUIOPASDF23 secret «wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEYzq3h9Lp» ok",
		"secret «wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEYzq3h9Lp» for ASIAQWERTYUIOPASDF23",
		"AKIAQWERTYUIOPASDF23\n«wJalrXUtnFEMIK7MDENG/bPxRfiCYzzKEYzq3h9L»",
		"u,,AKIAQWERTYUIOPASDF23,«wJalrXUtnFEMIK7MDENG+bPxRfiCYzzKEYzq3h9L»,https://console",
	}, []string{
		"AKIAQWERTYUIOPASDF23 in commit 3f786850e387550fdab836ed7e6dc881de23001b",
		"AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"AKIAQWERTYUIOPASDF23 sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==",
		"wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEYzq3h9Lp\nAKIAQWERTYUIOPASDF23", // a line before: Stream has written it
		"AKIAQWERTYUIOPASDF23 and a 40-byte run of one case ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGH",
		"xAKIAQWERTYUIOPASDF23 wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEYzq3h9Lp",
	}},

	{"cli-mysql", []string{"mysql -h db -u root -p«S3cretPass» app", "mysqldump -uroot -p'«S3 cret»' --all-databases", "/usr/bin/mysql -p«root»"},
		[]string{"mysql -u root -p app", "mysql -P 3306 -p", "mysql -p$MYSQL_PWD", "mysql.connector -pS3cretPass", "mysqlx -pS3cretPass", "mysql -pxxxx"}},
	{"cli-sshpass", []string{"sshpass -p '«Xk29fjQ!»' ssh deploy@host", "sshpass -p«Xk29fjQ» scp a b:", `sshpass -p "«a\"b\$c9»" ssh h`},
		[]string{"sshpass -e ssh host", "sshpass -f ~/.pw ssh host", "ssh -p 2222 host", `sshpass -p "$PW" ssh h`, "sshpass -p to pass it"}},
	{"cli-curl", []string{"curl -s -u deploy:«Sup3rS3cret» https://api/", `curl --user "ci:«pa ss9»" https://x`, "curl -uadmin:«Sup3rS3cret» https://x", "curl --user=a:«Sup3rS3cret» x"},
		[]string{`curl -u "$USER:$TOKEN" https://x`, "curl -u admin https://x", "curl -u user:password https://x", "curl -X POST -d u:Sup3rS3cret https://x", "curling -u a:Sup3rS3cret"}},
	{"cli-registry-login", []string{"docker login -u ci -p «Dk8s7Hq2» registry:5000", "oc login -u dev -p «Dk8s7Hq2» https://api"},
		[]string{"docker run -p 8080:80 nginx", "docker login -p --password-stdin", "docker login --password-stdin < pw"}},
	{"cli-redis", []string{"redis-cli -h cache -a «Xk29fjQz9» ping"}, []string{`redis-cli -a "$REDIS_PASSWORD" ping`, "redis-cli -h cache ping"}},
	{"cli-mongo", []string{`mongosh "mongodb://h:27017" -u admin -p «Xk29fjQz»`}, []string{"mongosh -u admin -p", "mongoose -p Xk29fjQz"}},
	{"cli-ldap", []string{`ldapsearch -x -D "cn=admin" -w «Xk29fjQz» -b dc=corp`}, []string{"ldapsearch -x -W -b dc=corp"}},
	{"cli-sqlcmd", []string{`sqlcmd -S db -U sa -P «Xk29fjQz» -Q "SELECT 1"`}, []string{"sqlcmd -S db -E"}},
	{"cli-archive", []string{"zip -P «Xk29fjQz» b.zip a.txt", "7z a -p«Xk29fjQz» b.7z a"}, []string{"zip -r out.zip dist", "unzip -p a.zip file"}},
	{"cli-smb", []string{"smbclient //fs/share -U admin%«Xk29fjQz» -c ls"}, []string{"smbclient //fs/share -U admin -c ls"}},
	{"cli-openssl", []string{"openssl pkcs12 -export -in c.pem -passout pass:«Xk29fjQz» -out c.p12"},
		[]string{"openssl pkcs12 -passout env:P12_PASS -passin file:pw.txt", "openssl rand -hex 32"}},
	{"cli-keytool", []string{"keytool -list -keystore ks.jks -storepass «Xk29fjQz»"}, []string{"keytool -list -keystore ks.jks"}},
	{"cli-rdp", []string{"xfreerdp /u:admin /p:«Xk29fjQz» /v:host"}, []string{"xfreerdp /u:admin /v:host"}},

	{"email", []string{"Contact: «jane.doe@acme-corp.io»"}, []string{"svc@proj.iam.gserviceaccount.com", "user@example.com", "icon@2x.png"}},
	{"card-number", []string{"«4242 4242 4242 4242»", "«5555-5555-5555-4444»", "«378282246310005»", "«3056 930902 5904»", `{"pan":"«6011111111111117»"}`},
		[]string{"4242 4242 4242 4241", "4242 4242", "4111111111111111111111", "x = 4234737173186232084,", "{7, \"476837158203125\"}", "// * 35184372088832", "20240315-4242-4242", "4242 4242-4242 4242"}},
	{"ssn", []string{"SSN: «219-09-9999»"}, []string{"666-12-3456", "219099999"}},
	{"phone", []string{"Call «(415) 555-2671»", "«+44 20 7946 0958»"}, []string{"tel 555-1234", "123-456-7890"}},
}

// mustTable lists the rule checks that must have a row in ruleTable: every
// rule but the provider-token shapes, which the labelled set covers.
func mustTable(r *rule) bool {
	return r.line || r.check != "" && r.check != "mixed"
}

func TestRuleTable(t *testing.T) {
	rules, err := shippedRules()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*rule{}
	for _, r := range rules {
		byName[r.name] = r
	}
	covered := map[string]bool{}
	for _, row := range ruleTable {
		r := byName[row.rule]
		if r == nil {
			t.Errorf("ruleTable names no rule %q", row.rule)
			continue
		}
		covered[row.rule] = true
		rd, err := build(rules, nil, func(x *rule) bool { return x == r })
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range row.pos {
			cs, err := redacttest.Parse("=== "+r.kind+" x\n"+p, 1)
			if err != nil {
				t.Fatalf("%s positive %d: %v", row.rule, i, err)
			}
			c := cs[0]
			want := maskSpans(c)
			if got, _ := rd.RedactString(c.Text); got != want {
				t.Errorf("%s alone:\n got %q\nwant %q", row.rule, got, want)
			}
		}
		for _, n := range row.neg {
			if got, fs := rd.RedactString(n); len(fs) > 0 {
				t.Errorf("%s alone masked a near miss:\n%q\n%q", row.rule, n, got)
			}
		}
	}
	for _, r := range rules {
		if mustTable(r) && !covered[r.name] {
			t.Errorf("rule %s has no row in ruleTable", r.name)
		}
	}
}

// maskSpans is a case's text with its spans masked as its kind.
func maskSpans(c redacttest.Case) string {
	var b strings.Builder
	pos := 0
	for i, sp := range c.Spans {
		b.WriteString(c.Text[pos:sp[0]])
		b.WriteString(Mask(c.SpanKinds[i]))
		pos = sp[1]
	}
	b.WriteString(c.Text[pos:])
	return b.String()
}

func TestFlagTemplates(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"-p VALUE", "{-p false 0 }"},
		{"-pVALUE", "{-p true 0 }"},
		{"--password=VALUE", "{--password= true 0 }"},
		{"-u USER:VALUE", "{-u false 58 }"},
		{"-uUSER:VALUE", "{-u true 58 }"},
		{"-passout pass:VALUE", "{-passout false 0 pass:}"},
		{"/p:VALUE", "{/p: true 0 }"},
	} {
		got, err := parseFlagTemplate(c.in)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("%q: got %v %v, want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "VALUE", "p VALUE", "-p", "-p USER", "-p USERVALUE", "-p VALUE x", "-p a b VALUE", "-p USER:USER:VALUE", "-p VALUEVALUE", "- VALUE", "-USER:VALUE"} {
		if _, err := parseFlagTemplate(bad); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
}

// maxRuleInsts is the largest compiled pattern Go's regexp runs on its
// bounded backtracker (its maxBacktrackProg) rather than the several times
// slower NFA: a counted repetition such as {4,256} copies its body 256
// times and crosses it, so patterns leave lengths to the line window.
const maxRuleInsts = 500

func TestRulePatternsStaySmall(t *testing.T) {
	rules, err := shippedRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.re == nil {
			continue
		}
		re, err := syntax.Parse(r.re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(prog.Inst); n > maxRuleInsts {
			t.Errorf("rule %s compiles to %d instructions, over %d", r.name, n, maxRuleInsts)
		}
	}
}
