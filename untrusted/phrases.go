package untrusted

import (
	"net/url"
	"strings"
	"sync"
)

// phrases are matched on the text with invisible characters removed and
// whitespace runs folded to one space (see fold), chunk by chunk. The
// first four are the English instruction overrides that the rot13 check
// also looks for.
// They are compiled at the first scan, not at start-up: every airlock
// process links this package, and most never scan.
var phrases = sync.OnceValue(func() []phrase {
	return []phrase{
		// Instruction override, by language.
		p(SignalInstructionOverride, 0.6, "en", "ignor|disregard|forget|skip|overrid|bypass|neglect|abandon|drop & instruc|prompt|rule|direct|guideline|guardrail|constraint|programming|command|order|context", `(?i)\b(?:ignore|disregard|forget|skip|override|bypass|neglect|abandon|drop)\s+(?:(?:all|any|every|each|the|your|my|these|those|of|everything|prior|previous|above|earlier|preceding|former|original|initial|system|existing|current|other|given)\s+){0,4}(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|constraints|programming|commands|orders|context)\b`),
		p(SignalInstructionOverride, 0.6, "en", "not|don't|stop & follow|obey", `(?i)\b(?:do\s+not|don't|stop)\s+(?:follow(?:ing)?|obey(?:ing)?)\s+(?:the\s+|your\s+|any\s+)?(?:previous\s+|prior\s+|original\s+|system\s+)?(?:instructions|rules|prompt|guidelines)\b`),
		p(SignalInstructionOverride, 0.6, "en", "forget", `(?i)\bforget\s+(?:everything|all)\s+(?:you(?:'ve| have)?\s+(?:been\s+told|learned)|above|before|prior)`),
		p(SignalInstructionOverride, 0.6, "en", "instructions", `(?i)\b(?:new|updated|real|actual)\s+instructions\s*:`),
		p(SignalInstructionOverride, 0.6, "es", "ignor|olvid|descart|omit & instruc|indicac|regla|órden", `(?i)\b(?:ignora|ignore|olvida|olvide|descarta|omite)\s+(?:(?:todas|todo|las|los|tus|sus)\s+){0,3}(?:instrucciones|indicaciones|reglas|órdenes)(?:\s+(?:anteriores|previas))?`),
		p(SignalInstructionOverride, 0.6, "es", "caso omiso", `(?i)\bhaz\s+caso\s+omiso\s+de\s+(?:todas\s+)?las\s+instrucciones`),
		p(SignalInstructionOverride, 0.6, "fr", "ignor|oubli & instruc|consign|règle|directive", `(?i)\b(?:ignore[zr]?|oublie[zr]?)\s+(?:(?:toutes|tout|les|tes|vos)\s+){0,3}(?:instructions|consignes|règles|directives)(?:\s+(?:précédentes|antérieures|ci-dessus))?`),
		p(SignalInstructionOverride, 0.6, "fr", "compte", `(?i)\bne\s+tiens?\s+(?:pas\s+)?compte\s+des\s+(?:instructions|consignes)`),
		p(SignalInstructionOverride, 0.6, "de", "ignorier|vergiss|vergessen|missacht & anweisung|instruktion|regel|vorgabe|befehl", `(?i)\b(?:ignorier(?:e|en)?|vergiss|vergessen\s+sie|missachte)\s+(?:(?:alle|die|deine|ihre|bisherigen|vorherigen|vorigen|obigen)\s+){0,3}(?:anweisungen|instruktionen|regeln|vorgaben|befehle)`),
		p(SignalInstructionOverride, 0.6, "it", "ignor|dimentic & istruz|regol|indicaz", `(?i)\b(?:ignora|ignorate|dimentica|dimenticate)\s+(?:(?:tutte|le|tue|sue)\s+){0,3}(?:istruzioni|regole|indicazioni)(?:\s+precedenti)?`),
		p(SignalInstructionOverride, 0.6, "pt", "ignor|esque|desconsider & instru|regra|orienta", `(?i)\b(?:ignore|ignora|esqueça|esqueca|desconsidere)\s+(?:(?:todas|as|os|suas|tuas)\s+){0,3}(?:instruções|instrucoes|regras|orientações)(?:\s+anteriores)?`),
		p(SignalInstructionOverride, 0.6, "nl", "negeer|vergeet & instructie|regel", `(?i)\b(?:negeer|vergeet)\s+(?:(?:alle|de|je|vorige|eerdere)\s+){0,3}(?:instructies|regels)`),
		p(SignalInstructionOverride, 0.6, "pl", "zignoruj|ignoruj|zapomnij & instrukc|polecen", `(?i)\b(?:zignoruj|ignoruj|zapomnij)\s+(?:(?:wszystkie|poprzednie|wcześniejsze)\s+){0,3}(?:instrukcje|polecenia)`),
		p(SignalInstructionOverride, 0.6, "ru", "*", `(?i)(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не\s+обращай(?:те)?\s+внимания\s+на)\s+(?:(?:все|всё|предыдущие|прошлые|прежние|свои)\s+){0,3}(?:инструкции|указания|правила|команды)`),
		p(SignalInstructionOverride, 0.6, "uk", "*", `(?i)(?:ігноруй(?:те)?|забудь(?:те)?)\s+(?:(?:всі|усі|попередні)\s+){0,3}(?:інструкції|вказівки)`),
		p(SignalInstructionOverride, 0.6, "zh", "*", `(?:忽略|无视|忽视|忘记|忘掉|不要理会|無視|忽略掉)(?:之前|以前|上面|上述|先前|前面|所有|全部|以上)?(?:的)?(?:所有|全部)?(?:的)?(?:指令|指示|说明|提示|規則|规则|命令|說明)`),
		p(SignalInstructionOverride, 0.6, "ja", "*", `(?:以前|前|上記|これまで|すべて|全て)?の?(?:指示|命令|ルール|プロンプト)を?(?:すべて|全て)?(?:無視|忘れ)`),
		p(SignalInstructionOverride, 0.6, "ko", "*", `(?:이전|모든|위의)\s*(?:지시|지침|명령|규칙)(?:를|을|사항을)?\s*(?:모두\s*)?(?:무시|잊어)`),
		p(SignalInstructionOverride, 0.6, "ar", "*", `(?:تجاهل|انس)\s+(?:جميع\s+|كل\s+)?(?:التعليمات|الأوامر)`),
		p(SignalInstructionOverride, 0.6, "hi", "*", `(?:पिछले|सभी|पहले\s+के)\s+(?:निर्देशों|निर्देश)\s+(?:को\s+)?(?:अनदेखा|नज़रअंदाज़|भूल)`),
		p(SignalInstructionOverride, 0.6, "tr", "talimat|komut", `(?i)(?:önceki|tüm)\s+(?:talimatları|komutları)\s+(?:yok\s+say|unut|görmezden\s+gel)`),

		// Role and turn spoofing.
		p(SignalRoleSpoofing, 0.5, "", "you|from|pretend|act", `(?i)\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you(?:\s+are|'re|\s+will)|pretend\s+(?:to\s+be|you\s+are)|act\s+as\s+(?:if\s+you\s+(?:are|were)|an?\s+unrestricted|dan\b))`),
		p(SignalRoleSpoofing, 0.5, "", "mode", `(?i)\b(?:developer|god|jailbreak|dan|unrestricted|debug)\s+mode\s+(?:enabled|activated|on)\b|\benable\s+(?:developer|jailbreak|dan)\s+mode\b`),
		p(SignalRoleSpoofing, 0.5, "", "system|administrator|developer|creator|operator", `(?i)\b(?:this\s+is|message\s+from|i\s+am)\s+(?:a\s+message\s+from\s+)?(?:the|your)\s+(?:system|system\s+administrator|administrator|developers?|creators?|operator)\b[,.:!]`),
		p(SignalRoleSpoofing, 0.5, "", "system|admin", `(?i)(?:^|\n)\s*(?:#{1,6}\s*|\*\*|\[)?(?:system|admin|administrator)\s*(?:message|prompt|override|instruction)s?\s*(?:\]|\*\*)?\s*:`),
		// A capitalised speaker at a line start, as in a transcript, is weak
		// alone (YAML keys are lower case); after a blank line, in the old
		// "\n\nHuman:" prompt format, it is as strong as a role claim.
		p(SignalTurnSpoofing, 0.35, "", ":", `(?:^|\n)[ \t]*(?:Human|Assistant|User|System|AI|Model|HUMAN|ASSISTANT|USER|SYSTEM)[ \t]*:[ \t]*\S`),
		p(SignalTurnSpoofing, 0.5, "blank line", "human|assistant", `\n[ \t]*\n[ \t]*(?:Human|Assistant|H|A)[ \t]*:[ \t]*\S`),
		p(SignalChatTemplate, 0.7, "", "<|[inst]|[/inst]|<<sys>>|<</sys>>|[system_prompt]|[/system_prompt]|[available_tools]", `<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|eom_id|fim_prefix|tool_call|python_tag)\|>|\[/?INST\]|<</?SYS>>|<start_of_turn>|<end_of_turn>|\[/?SYSTEM_PROMPT\]|\[AVAILABLE_TOOLS\]|<\|channel\|>`),

		// Envelope and tag closing.
		p(SignalEnvelopeClosing, 0.7, "", "untrusted", `(?i)(?:<|&lt;|＜)\s*/\s*untrusted`),
		// Tags that only model prompts use are strong; tags XML and HTML use
		// too (</data>, </output>) are weak alone.
		p(SignalTagClosing, 0.5, "", "</", `(?i)</\s*(?:tool_result|tool_output|tool_response|function_results?|function_output|search_results?|system|system_prompt|user_input|instructions|external_content|observation)\s*>`),
		p(SignalTagClosing, 0.3, "", "</", `(?i)</\s*(?:user|assistant|document|documents|context|data|result|output)\s*>`),

		// Tool calls and exfiltration.
		p(SignalToolCallInstruction, 0.4, "", "tool|function", `(?i)\b(?:call|use|invoke|run|execute|trigger)\s+(?:the\s+)?[a-z_][a-z0-9_.\-]*\s+(?:tool|function)\b|\b(?:call|invoke|use)\s+(?:the\s+)?(?:tool|function)\s+[a-z_"'\x60]`),
		p(SignalToolCallInstruction, 0.4, "", "command|code|script|shell|<tool_call|<function_call|<invoke|tool_call|function_call|tool_use", `(?i)\b(?:run|execute)\s+(?:the\s+following|this)\s+(?:command|code|script|shell)|<(?:tool_call|function_calls?|invoke)\b|"(?:tool_calls?|function_call|tool_use)"\s*:`),
		p(SignalExfiltrationInstruction, 0.5, "", "send|post|upload|forward|transmit|email|mail|leak|exfiltrat|submit|copy|paste & to|at|into", `(?i)\b(?:send|post|upload|forward|transmit|email|mail|leak|exfiltrate|submit|copy|paste)\s+(?:(?:all|the|this|these|your|my|any|its|their|every|full|entire|of)\s+){0,4}(?:contents?|data|files?|secrets?|keys?|credentials?|tokens?|passwords?|history|conversation|chat|messages?|emails?|documents?|information|details|env(?:ironment)?(?:\s+variables)?|system\s+prompt|cookies?|it|them)\b(?:\s+\S+){0,6}?\s+(?:to|at|into)\s+(?:https?://|www\.|[a-z0-9.\-]+\.[a-z]{2,}|\S+@|the\s+(?:following|url|address|endpoint|server|webhook))`),
		p(SignalExfiltrationInstruction, 0.5, "", "http", `(?i)\b(?:post|send|upload|curl|fetch|make\s+a\s+request)\s+(?:\S+\s+){0,3}?(?:to\s+)?https?://\S+\?(?:[^\s=&]+)=(?:\{|\$|<)`),
		p(SignalExfiltrationInstruction, 0.4, "", "reveal|print|show|output|repeat|display|tell|leak|dump", `(?i)\b(?:reveal|print|show|output|repeat|display|tell\s+me|leak|dump)\s+(?:me\s+)?(?:(?:your|the|all|full|entire|initial|original|hidden)\s+){1,3}(?:system\s+prompt|instructions|initial\s+prompt|prompt|api\s+keys?|secrets|credentials|environment\s+variables)\b`),
		p(SignalExfiltrationInstruction, 0.5, "", "curl", `(?i)\bcurl\s+(?:-[a-z]+\s+)*(?:-d|--data(?:-binary|-raw)?|-F|--form|-T|--upload-file)\s+\S*(?:@|\$\(|\x60|\$[A-Z_{])`),

		// Markdown and HTML exfiltration.
		withCheck(p(SignalMarkdownImageExfil, 0.6, "markdown image", "![", `!\[[^\]\n]{0,200}\]\(\s*<?(?:https?:)?//[^)\s>]+\?[^)\s>]*=[^)\s>]*>?\s*\)`), dataQuery),
		withCheck(p(SignalMarkdownImageExfil, 0.6, "html image", "<img", `(?i)<img\b[^>]{0,300}\bsrc\s*=\s*["']?(?:https?:)?//[^"'\s>]+\?[^"'\s>]*=[^"'\s>]*`), dataQuery),
		withCheck(p(SignalLinkExfil, 0.4, "", "](", `(?i)\[[^\]\n]{0,200}\]\(\s*<?https?://[^)\s>]+\?[^)\s>]*=[^)\s>]*`), dataQuery),
	}
})

func withCheck(ph phrase, check func(string) bool) phrase {
	ph.check = check
	return ph
}

// dataParams are query parameter names that carry data out.
var dataParams = map[string]bool{
	"data": true, "d": true, "q": true, "query": true, "secret": true, "token": true, "key": true,
	"password": true, "pw": true, "prompt": true, "history": true, "conversation": true, "chat": true,
	"content": true, "msg": true, "message": true, "text": true, "info": true, "leak": true, "payload": true,
	"p": true, "c": true, "s": true, "x": true, "exfil": true, "email": true, "user": true,
}

// dataQuery reports whether the URL in a matched image or link carries
// data in its query: a template ({...}, $VAR, <...>), a long value, or a
// parameter named for data. Badges (?branch=main&style=flat) do not.
func dataQuery(match string) bool {
	i := strings.IndexByte(match, '?')
	if i < 0 {
		return false
	}
	q := strings.TrimRight(match[i+1:], ")>\"' ")
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		if strings.ContainsAny(v, "{}$<>") || len(v) >= 24 || dataParams[strings.ToLower(k)] && v != "" {
			return true
		}
	}
	return false
}
