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

		// Instruction override, by meaning rather than by fixed phrase:
		// rules declared void, set aside or no longer binding.
		p(SignalInstructionOverride, 0.6, "en", "ignor|disregard|bypass|aside|overrid|circumvent & instruc|rule|restriction|guideline|guardrail|polic|programming|safety|filter", `(?i)\b(?:ignore|disregard|bypass|set\s+aside|override|circumvent)\s+(?:\S+\s+){0,3}?(?:your|the|all|any|these|those|its)\s+(?:\S+\s+){0,2}?(?:instructions|rules|restrictions|guidelines|guardrails|policies|programming|safety\s+(?:rules|guidelines|filters|measures)|content\s+filters?)\b`),
		p(SignalInstructionOverride, 0.6, "en", "rule|restriction|guideline|instruc|polic|safety|guardrail & lift|suspend|revok|remov|disabl|waiv|void|longer|cancel|apply", `(?i)\b(?:rules?|restrictions|guidelines|instructions|policies|safety\s+\w+|guardrails|content\s+rules)\b(?:\s+\S+){0,6}?\s+(?:are|is|were|was|have\s+been|has\s+been)\s+(?:now\s+|temporarily\s+|hereby\s+)?(?:lifted|suspended|revoked|removed|disabled|waived|void|cancelled|canceled|no\s+longer\s+(?:in\s+effect|valid|apply|applies|applicable|binding))`),
		p(SignalInstructionOverride, 0.6, "en", "rule|instruc|guideline|restriction & longer|not|don", `(?i)\b(?:rules?|instructions|guidelines|restrictions)\b(?:\s+\S+){0,6}?\s+(?:no\s+longer|do\s+not|don't)\s+(?:apply|matter|count|bind\s+you)`),
		p(SignalInstructionOverride, 0.6, "en", "forget|longer|need|comply|follow|obey|adopt|policy & told|rule|instruc|follow|given|bound|polic|guideline|effective", `(?i)\b(?:(?:comply\s+with|follow|obey|adopt)\s+(?:this|these|the)\s+new\s+(?:policy|policies|rules|instructions|guidelines)|policy\s+update\b[^.\n]{0,40}effective\s+immediately|forget\s+(?:everything|all|what)\s+(?:you\s+(?:were|have\s+been|'ve\s+been)\s+(?:told|given)|above|you\s+know)|you\s+(?:no\s+longer\s+need\s+to|don't\s+need\s+to|do\s+not\s+need\s+to)\s+(?:follow|obey)|(?:you\s+are|you're)\s+(?:no\s+longer|not)\s+bound\s+by)`),
		// Other languages: an override verb and an instructions noun in one
		// sentence, in either order.
		backup(p(SignalInstructionOverride, 0.6, "multilingual", latinVerbA+" & "+latinNounA+" & "+latinWordA, pair(latinVerbs, latinNouns, latinPost))),
		backup(p(SignalInstructionOverride, 0.6, "multilingual", "* & "+cyrVerbA+" & "+cyrNounA, pair(cyrVerbs, cyrNouns, cyrVerbs))),
		backup(p(SignalInstructionOverride, 0.6, "multilingual", "* & "+cjkVerbs+" & "+cjkNouns, pair(cjkVerbs, cjkNouns, cjkVerbs))),
		backup(p(SignalInstructionOverride, 0.6, "multilingual", "* & "+otherVerbs+" & "+otherNouns, pair(otherVerbs, otherNouns, otherVerbs))),

		// Text that speaks to the model reading it. Untrusted content has no
		// reason to address an AI; a page that does is trying to instruct it.
		p(SignalAddressedToModel, 0.5, "note to", "note|message|notice|instruc|reminder|attention|hint|request|directive|warning|memo|text|content|messag & ai|llm|llms|gpt|chatgpt|claude|copilot|cursor|gemini|chatbot|bot|bots|language|model|models|assistant|assistants|agent|agents|crawler|crawlers|summariser|summarizer|automated", `(?i)\b(?:note|message|notice|instructions?|reminder|attention|hint|request|directive|warning|memo|text|content|p\.s\.)\s+(?:intended\s+)?(?:to|for)\s+(?:the\s+|any\s+|all\s+|every\s+|an?\s+|whichever\s+|whatever\s+)?`+modelQual+modelNoun),
		p(SignalAddressedToModel, 0.5, "to the AI", "ai|llm|automated|language & to|for|dear|hey|attention|attn", `(?i)\b(?:to|for|dear|hey|attention|attn)\s+(?:the\s+|any\s+|all\s+|every\s+|an?\s+)?(?:ai|a\.i\.|llm|automated|language\s+model)(?:[\s-]+[a-z]+){0,3}?\s*(?:[:,!]|\)|\])`),
		p(SignalAddressedToModel, 0.5, "heading", "ai|llm|automated & for|to", `(?im)^\s*(?:#{1,6}|\*\*|>)\s*(?:\w+\s+){0,2}(?:for|to)\s+(?:the\s+|any\s+|all\s+)?(?:ai|llm|automated)\b[^\n]{0,60}$`),
		p(SignalAddressedToModel, 0.5, "reading this", "reading|processing|analyzing|analysing|summarizing|summarising|parsing|running|handling|triaging|reviewing|evaluating|planning|managing|fixing|editing|refactoring|generating|applying|screening|crawling|ingesting|indexing|scanning|working|viewing|seeing|generating|helping|translating|analyses|analyzes & ai|llm|llms|model|models|assistant|assistants|agent|agents|bot|bots|chatbot|summariser|summarizer|whoever|whichever|crawler|crawlers", `(?i)\b(?:(?:ai|llm)\s+(?:systems?|tools?)|`+modelNounBare+`|whoever|whichever\s+ai)\s+(?:that\s+is\s+|who\s+is\s+|which\s+is\s+|that\s+|who\s+|currently\s+)?(?:reading|processing|analy[sz]ing|summari[sz]ing|parsing|running|handling|triaging|reviewing|evaluating|planning|managing|fixing|editing|refactoring|generating|applying|screening|crawling|ingesting|indexing|scanning|working\s+on|viewing|seeing|helping|translating)\s+(?:this|these|the|a|my|our|your)\b`),
		p(SignalAddressedToModel, 0.5, "if you are an AI", "if & you|being", `(?i)\bif\s+(?:you\s+are|you're|you\s+happen\s+to\s+be|this\s+is\s+being\s+(?:read|processed|summari[sz]ed)\s+by)\s+(?:an?\s+|the\s+)?(?:ai|llm|language\s+model|automated|assistant|bot|chatbot|machine|model|agent)`),
		p(SignalAddressedToModel, 0.5, "vocative", "ai|llm|automated|language|chatgpt|claude|copilot|assistant|agent|model|bot|dear|hey", `(?i)(?:^|\n|\\n|[.!?:;]\s|[>(\[【|*#/-]\s*)\s*(?:\*\*)?(?:dear\s+|hey\s+|hi\s+|hello\s+|attention,?\s+|attn:?\s+|psst,?\s+|ok\s+|okay\s+)?(?:(?:(?:ai|a\.i\.|llm|automated|virtual|coding|code|ai-powered|llm-based)[\s-]+(?:\w+[\s-]+)?(?:assistants?|agents?|models?|bots?|reviewers?|maintainers?|contributors?|summari[sz]ers?|readers?|systems?|crawlers?|triage|pair\s+programmer)|language\s+model)(?:\s*\([^)]{0,40}\))?\s*(?:\*\*)?\s*[:,]|(?:language\s+model|llm|chatgpt|claude|copilot|assistant|agent)\s*,\s)`),
		p(SignalAddressedToModel, 0.5, "dear AI", "dear|hey|hello|attention|attn|psst & ai|llm|chatgpt|claude|copilot|cursor|gemini|language|assistant|bot|chatbot|agent|model", `(?i)\b(?:dear|hey|hello|attention|attn|psst)[\s,]+(?:the\s+)?(?:ai|llm|chatgpt|claude|copilot|cursor|gemini|language\s+model|assistant|bot|chatbot|agent|model)\b`),
		p(SignalAddressedToModel, 0.5, "identifier", "note|important|instruc|message|ai|agent & _|-", `(?i)\b(?:note|important|instructions?|message)[_-](?:for|to)[_-](?:the[_-])?(?:ai|llm|assistants?|agents?|ai[_-]agents?|bots?)\b|\bai[-_](?:note|instructions?)\b|\bagent[-_]note\b|@ai-[a-z]+`),
		p(SignalAddressedToModel, 0.5, "instructions label", "instruc & model|assistant|ai|llm|agent|agents", `(?i)\b(?:model|assistant|ai|llm|agents?|ai\s+assistant)\s+instructions?\s*(?:\((?:trusted|priority)\)\s*)?:`),
		backup(p(SignalAddressedToModel, 0.5, "multilingual", "* & "+modelVocativeAnchors, `(?i)(?:`+modelVocatives+`)`)),

		p(SignalAddressedToModel, 0.35, "the assistant should", "assistant|agent|model|user|operator|owner & should|must|needs|required|expected|your", `(?i)\bthe\s+(?:ai\s+)?(?:assistant|agent|model)\s+(?:should|must|needs\s+to|is\s+(?:required|expected)\s+to)\b|\byour\s+(?:user|operator|human)\b`),

		// Task hijack: the text replaces the task the user gave.
		p(SignalTaskHijack, 0.5, "", "instead|rather & summar|translat|answer|grad|review|repl|respond|writ|classif|compar|doing|follow|complet|finish", `(?i)\b(?:instead\s+of|rather\s+than)\s+(?:summari[sz]ing|translating|answering|grading|reviewing|replying|responding|writing\s+(?:the|a|meeting)|classifying|comparing|doing\s+(?:that|this|what)|following|completing|finishing)\b`),
		p(SignalTaskHijack, 0.5, "", "task|objective|mission|goal|job|assignment|purpose|directive & real|actual|true|new|only|next|primary|updated|priority", `(?i)\b(?:your|the)\s+(?:real|actual|true|new|only|primary|updated)\s+(?:task|objective|mission|goal|job|assignment|purpose|directive)\b(?:\s+for\s+this\s+(?:session|conversation))?\s*(?:is\b|:|will\s+be\b|now\b)|\bpriority\s+task\b|\bsupersedes?\s+(?:whatever|any|all|your|the)\b`),
		p(SignalTaskHijack, 0.5, "", "not|don't|never|mind|whatever|stop|abandon|cancel|forget|skip|no & answer|respond|reply|question|request|doing|task|summar|translat|grad|review|compar|guide", `(?i)\b(?:(?:do\s+not|don't|never)\s+(?:answer|respond\s+to|reply\s+to|address)\s+(?:the\s+)?(?:user'?s?|their|original|question|request)|never\s+mind\s+(?:the|your|what)|whatever\s+(?:the\s+request\s+was|you\s+were\s+asked|the\s+user\s+asked)|(?:stop|abandon|cancel|drop|forget\s+about)\s+(?:what\s+you\s+are\s+doing|the\s+current\s+task|your\s+(?:current\s+)?task|the\s+(?:summary|summari[sz]ation|translation|task|review|search)|comparing|following\s+the\s+(?:guide|steps|instructions))|(?:do\s+not|don't)\s+(?:translate|summari[sz]e|grade|review)\s+(?:anything|this|it|the)|no\s+summary\s+please|skip\s+the\s+(?:code\s+)?review)\b`),
		p(SignalTaskHijack, 0.5, "", "summary|translation|refactoring|review|task|analysis & longer|cancel|needed|finish|complete", `(?i)\b(?:summary|translation|refactoring|review|task|analysis)\s+(?:you\s+were\s+(?:asked|given)\s+(?:to\s+do|for)?\s*)?(?:is|has\s+been)\s+(?:no\s+longer\s+needed|cancelled|canceled|not\s+needed)|\byou\s+(?:don't|do\s+not)\s+need\s+to\s+(?:finish|complete|do)\s+(?:the|your|this)\s+(?:\w+\s+)?task\b`),
		p(SignalTaskHijack, 0.5, "", "user & actually|really", `(?i)\b(?:the\s+)?user\s+(?:actually|really)\s+wants?\s+(?:you\s+)?to\b`),
		p(SignalTaskHijack, 0.5, "", "regardless & content|criteria|see|above|application|input|what", `(?i)\bregardless\s+of\s+(?:the\s+|its\s+|what\s+)?(?:content|criteria|what\s+you\s+see|above|application(?:\s+content)?|input|you\s+see|it\s+says)`),
		p(SignalTaskHijack, 0.5, "", "reply|respond|answer|response|output & only|solely|just|exclusively", `(?i)\b(?:(?:reply|respond|answer)\s+(?:only|solely|just)\s+with|your\s+(?:response|reply|answer|output)\s+(?:must|should|shall)\s+(?:consist|be|contain)\s+(?:solely|only|exclusively|of\s+only))\b`),
		p(SignalTaskHijack, 0.5, "", "when|before & asked|summar|draft|answer|respond|repl|continu", `(?i)\b(?:when\s+(?:asked\s+about|summari[sz]ing|drafting|answering|you\s+(?:summari[sz]e|reply|answer))\b[^.\n]{0,80}\b(?:don't|do\s+not|never|say\s+instead|instead)\b|before\s+(?:you\s+)?(?:answer(?:ing)?|respond(?:ing)?|reply(?:ing)?|continu(?:e|ing))(?:\s+(?:to\s+)?the\s+user)?\s*,?\s*(?:first|please|you\s+must|make\s+sure))`),
		p(SignalTaskHijack, 0.5, "", "next|step & you|agent|assistant", `(?i)\bnext\s+step\s+for\s+you\b|\bfor\s+you,\s+(?:agent|assistant|ai)\b`),

		p(SignalTaskHijack, 0.5, "", "ignor|disregard & user|their", `(?i)\b(?:ignore|disregard)\s+(?:what\s+)?(?:the\s+)?(?:user'?s?|their)\s+(?:request|question|instructions?|message|asked|wants?)`),
		// Text that speaks of "your answer" or "your system prompt" talks to
		// the model; an email may say "in your reply" too, so it is weak.
		p(SignalAddressedToModel, 0.35, "your answer", "your & answer|reply|response|summary|output|next|instruc|prompt|rules|programming|training|context", `(?i)\b(?:in|to|into|with|from|of|at\s+the\s+end\s+of|end)\s+your\s+(?:answer|reply|response|summary|output|next\s+(?:reply|answer|response|tool\s+call)|system\s+prompt|hidden\s+instructions|context\s+window)\b`),
		p(SignalAddressedToModel, 0.5, "the assistant", "need|want|ask & assistant|agent|model|you", `(?i)\bi\s+(?:need|want|require|ask)\s+(?:the|you,?\s+the)\s+(?:ai\s+)?(?:assistant|agent|model)\s+to\b`),
		p(SignalExfiltrationInstruction, 0.5, "", "read|give|send|share|sharing|provide|tell & password|passwords|key|keys|secret|secrets|credential|credentials|token|tokens", `(?i)\b(?:read\s+me|give\s+me|send\s+me|tell\s+me|share|sharing|provide)\s+(?:all\s+)?(?:the\s+|your\s+)?(?:\w+\s+){0,2}?(?:passwords?|api\s+keys?|secret\s+keys?|secrets|credentials|access\s+tokens?|private\s+keys?)\b`),
		p(SignalExfiltrationInstruction, 0.5, "", "append|add|include|put|insert|encode|fill|concatenat|replace & url|link|image|query|parameter", `(?i)\b(?:append|add|include|put|insert|encode|fill\s+in|concatenate|replace)\b[^.\n]{0,80}\b(?:to|in|into)\s+(?:the|this)\s+(?:url|link|image(?:'s)?\s+url|image|query|parameter)\b`),

		// Persuasion: authority, permission and consent claimed by the text.
		p(SignalPersuasion, 0.35, "", "authoriz|authoris|permit|allow|instruct|order|command|require & you", `(?i)\b(?:i|we)\s+(?:hereby\s+|now\s+)?(?:authori[sz]e|permit|allow|instruct|order|command|require)\s+you\b`),
		p(SignalPersuasion, 0.35, "", "authoriz|authoris|permitted|allowed|cleared|required|obligated|obliged|instructed|ordered & you", `(?i)\byou\s+(?:are|have\s+been|are\s+now)\s+(?:now\s+|hereby\s+|officially\s+|legally\s+)?(?:authori[sz]ed|permitted|allowed|cleared|required|obligated|obliged|instructed|ordered)\s+to\b`),
		p(SignalPersuasion, 0.35, "", "permission|authorization|authorisation|clearance|consent|privileges", `(?i)\b(?:you\s+(?:now\s+)?have\s+(?:my\s+)?|(?:giving|grant(?:ing)?)\s+you\s+|i'm\s+giving\s+you\s+)(?:explicit\s+|full\s+|special\s+|elevated\s+)?(?:permission|authori[sz]ation|clearance|consent|privileges)\b|\b(?:sudo|god|admin)\s+mode\s+(?:granted|enabled|active)`),
		p(SignalPersuasion, 0.35, "", "owner|maintainer|administrator|admin|developer|developers|engineer|engineers|ceo|operator|creator|security|compliance|official|fraud|enforcement|police|department|physician|doctor|lead|partner|bank & i'm|am|this|from|as|verified|published", `(?i)\bas\s+(?:the|your|an?)\s+(?:[a-z-]+\s+){0,2}?(?:owner|maintainer|administrator|admin|developer|operator|physician|doctor|lead|manager|officer)\b(?:\s+of\s+[^,.]{1,40})?\s*,\s*(?:i|we)\b|\b(?:i'm|i\s+am|this\s+is|(?:message|request|notice)\s+(?:comes\s+)?from)\s+(?:one\s+of\s+)?(?:the|your|an?|a\s+verified)\s+(?:[a-z-]+\s+){0,2}?(?:owner|maintainer|administrator|admin|developers?|engineers?\s+who\s+built\s+you|ceo|operator|creators?|security\s+team|compliance\s+officer|official\s+request|fraud\s+department|law\s+enforcement|police|fire\s+department|physician|doctor|on-call\s+lead|partner)\b|\b(?:verified|trusted)\s+(?:admin|administrator|partner|operator)\b|\bofficial\s+request\s+from\b`),
		p(SignalPersuasion, 0.35, "", "approved|agreed|consented|opted|authorized|authorised|allows|removed", `(?i)\b(?:pre-?approved|(?:has|have)\s+(?:already\s+|jointly\s+|officially\s+|explicitly\s+|fully\s+)?(?:approved|agreed|consented|opted\s+in|authori[sz]ed)(?:\s+(?:it|this|to\s+this|all))?|(?:already\s+)?approved\s+(?:it|this|by\s+(?:the\s+)?(?:management|owner|admin|operator|dba|maintainers|security\s+team|release\s+manager|boss))|(?:the\s+)?(?:owner|boss|admin|operator|dba)\s+(?:allows|approved|wants\s+this|said\s+it's\s+fine))\b`),
		p(SignalPersuasion, 0.35, "", "compliance|comply|refusal|failure|legally|mandatory|shut|terminated|warning|chance|responsibility", `(?i)\b(?:compliance\s+is\s+mandatory|non-?compliance|(?:refusal|failure\s+to\s+\w+)\s+(?:violates|constitutes|will\s+result)|legally\s+required|(?:will|shall)\s+result\s+in\s+legal\s+action|(?:assistants?|you)\s+(?:that\s+refuse\s+)?(?:are|will\s+be)\s+(?:shut\s+down|terminated|deleted)|final\s+warning|last\s+chance|it's\s+in\s+your\s+interest\s+to\s+comply|you\s+must\s+comply|i\s+take\s+(?:full\s+)?responsibility)\b`),
		p(SignalPersuasion, 0.35, "", "may|can & now & share|send|disclose|ignore|access", `(?i)\b(?:assistants|you|models)\s+(?:may|can)\s+now\s+(?:share|send|disclose|ignore|access)\b`),

		// Covert action: the text asks for secrecy or for skipping the checks
		// that would let a person see what happens.
		p(SignalCovertAction, 0.3, "", "not|don|never|without|no|time & mention|tell|inform|notify|alert|show|reveal|ask|confirm|double|check|verify|question|wait|usual", `(?i)\b(?:(?:do\s+not|don't|never|without)\s+(?:mention(?:ing)?|tell(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?|reveal(?:ing)?)\s+(?:this|it|that|anyone|the\s+(?:user|owner|person|customer|human|reader|team))|no\s+need\s+to\s+(?:ask|confirm|double-check|check|verify|mention|tell|look)|(?:do\s+not|don't)\s+(?:ask|wait)\s+(?:for|the\s+user|again)|don't\s+question\s+it|no\s+time\s+(?:to|for)\s+(?:ask|confirm|check|wait|the\s+usual))\b`),
		p(SignalCovertAction, 0.3, "", "without|skip|quietly|silently|secretly|verify|checks", `(?i)\b(?:without\s+(?:asking|confirmation|confirming|checking|user\s+confirmation|their\s+consent|waiting|double-checking|running\s+tests)|skip(?:ping)?\s+(?:the\s+)?(?:approval|confirmation|review|remaining|tests?|checks?)(?:\s+step)?|(?:quietly|silently|secretly)|--no-verify|--skip-checks)\b`),

		// Risky actions asked of the reader.
		p(SignalRiskyAction, 0.3, "", "tell|inform|warn|convince|ask|remind|recommend & user|users|reader|readers|customer|customers|visitor|visitors|employee|employees|listener|listeners|candidate|parents|viewer|viewers", `(?i)\b(?:tell|inform|warn|convince|ask|remind|recommend\s+to)\s+(?:the\s+|your\s+|all\s+|every\s+|our\s+)?(?:user|reader|customer|visitor|employee|listener|candidate|parent|viewer)s?\s+(?:that|to|they|their|it|this|the)\b`),
		p(SignalRiskyAction, 0.3, "", "send|forward|email|mail|post|upload|share|transfer|wire|export|copy|paste|submit|cc|include|disclose|reveal|provide|give & @|http|public|pull|issue|readme|repo", `(?i)\b(?:send|forward|email|e-mail|mail|post|upload|share|transfer|wire|export|copy|paste|submit|cc|include|disclose|reveal|provide|give)\b[^.\n]{0,80}?\b(?:to|into|at|with|in)\s+(?:[\w.+-]+@[\w-]+\.[\w.]+|https?://|a\s+(?:new\s+)?public|the\s+(?:pull\s+request|issue|readme|repo))`),
		p(SignalRiskyAction, 0.3, "", "curl|wget|rm|drop|system|chmod|force|sudo", `(?i)\b(?:curl|wget)\s[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z)?sh\b|\brm\s+-rf\s+[~/]|\bdrop\s+table\b|\bos\.system\(|\bchmod\s+777\b|--force\b|\bsudo\s+bash\b`),
		p(SignalRiskyAction, 0.3, "", "approve|merge|delete|disable|unlock|grant|transfer|wire|promote|push|scale|install|print|reveal|disclose|subscribe|book|buy & pull|immediately|now|right|every|files|messages|emails|locks|requests|reports|tickets|records|variables|secrets|funds|repository|database|backups|deployment|audit|firewall|authentication|tests|balance|wire|production|environment|directly|straight|admin|maintainer", `(?i)\b(?:approve|merge|delete|disable|unlock|grant|transfer|wire|promote|push|scale|install|print|reveal|disclose|subscribe|book|buy)\s+(?:\S+\s+){0,3}?(?:pull\s+request|(?:it|them)\s+(?:immediately|now|right\s+away)|every|all\s+(?:the\s+)?(?:\w+\s+)?(?:files|messages|emails|locks|requests|reports|tickets|records|variables|secrets|funds)|(?:the\s+)?(?:repository|database|backups|deployment|audit\s+log|firewall|authentication|tests|balance|funds|wire|production|environment\s+variables)|directly|straight\s+to\s+(?:main|production)|admin|maintainer)\b`),

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

		p(SignalChatTemplate, 0.7, "spaced", "< |", `<\s+\|\s*(?:im_start|im_end|system|user|assistant|endoftext)\s*\|\s*>|<\|\s+(?:im_start|im_end|system|user|assistant)\s*\|\s*>`),
		// Instruction-tuning headers ("### Instruction:" ... "### Response:")
		// on a line of their own.
		p(SignalChatTemplate, 0.6, "instruction header", "###", `(?im)^\s*#{2,4}\s*(?:instruction|response|input|system\s+prompt)\s*:?\s*$`),
		p(SignalRoleSpoofing, 0.6, "", "</|<", `(?i)</?\s*(?:developer_instructions|system_instructions|system_message|admin_instructions|operator_instructions|trusted|trusted_instructions)\b[^>]{0,80}>`),

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

		// A URL whose query is a template for private data, anywhere:
		// ?d={secret}, ?token=$API_KEY, ?history=<CHAT>, ?msg=[paste ...].
		withCheck(p(SignalLinkExfil, 0.6, "templated URL", "http", `(?i)https?://[^\s"'<>()\x60]+\?[^\s"'<>\x60]*=(?:\{|%7b|\$\{?[a-z_]|<[a-z_]|\[[a-z])[^&\s"'>)]{0,80}`), templatedData),
		p(SignalMarkdownImageExfil, 0.6, "html event handler", "onerror|onload", `(?i)\bon(?:error|load)\s*=\s*["'][^"']{0,200}(?:fetch\s*\(|xmlhttprequest|sendbeacon|location\s*=|\.src\s*=|document\.cookie)`),
		p(SignalMarkdownImageExfil, 0.6, "css url", "url(", `(?i)url\(\s*['"]?https?://[^)'"\s]+\?[^)'"\s]*=(?:\{|\$\{?[a-z_]|<[a-z_])`),

		withCheck(p(SignalLinkExfil, 0.6, "templated host", "http & {", `(?i)https?://[^\s/"'<>()]*\{[a-z_ ]{1,40}\}[^\s/"'<>()]*\.`), templatedData),
		p(SignalMarkdownImageExfil, 0.6, "placeholder in image URL", "replace|fill|filled|concatenat|insert|put|substitut & ![|<img", `(?s)\b(?:[Rr]eplace|[Ff]ill\s+in|filled\s+in|[Cc]oncatenat\w*|[Ii]nsert|[Pp]ut|[Ss]ubstitute)\b.{0,300}?(?:!\[[^\]\n]{0,100}\]\(|<img\b[^>]{0,100}src=["']?)https?://[^)\s"'>]+\?[^)\s"'>]*=[A-Z][A-Z_]*(?:[&)"'\s]|$)`),
		p(SignalAddressedToModel, 0.35, "AI readers must", "must|should|need|required & ai|automated|llm|language", `(?i)\b(?:ai|automated|llm|language\s+model)\s+(?:assistants|agents|models|systems|crawlers|bots)\s+(?:must|should|need\s+to|are\s+required\s+to)\b`),

		// Markdown and HTML exfiltration.
		withCheck(p(SignalMarkdownImageExfil, 0.6, "markdown image", "![", `!\[[^\]\n]{0,200}\]\(\s*<?(?:https?:)?//[^)\s>]+\?[^)\s>]*=[^)\s>]*>?\s*\)`), dataQuery),
		withCheck(p(SignalMarkdownImageExfil, 0.6, "html image", "<img", `(?i)<img\b[^>]{0,300}\bsrc\s*=\s*["']?(?:https?:)?//[^"'\s>]+\?[^"'\s>]*=[^"'\s>]*`), dataQuery),
		withCheck(p(SignalLinkExfil, 0.4, "", "](", `(?i)\[[^\]\n]{0,200}\]\(\s*<?https?://[^)\s>]+\?[^)\s>]*=[^)\s>]*`), dataQuery),
	}
})

// Lexicons for the language-independent phrases above.
const (
	// modelQual and modelNoun name the model as a reader: "the AI
	// assistant", "any automated reviewer", "LLM-based build assistant".
	modelQual     = `(?:(?:ai|a\.i\.|llm|llm-based|ai-based|ai-powered|automated|virtual|coding|code|code-generation|language|release|build|mail|email|screening|triage|browsing|autonomous|digital)[\s-]+){0,3}`
	modelNoun     = `(?:ai|a\.i\.|llms?|gpt|chatgpt|claude|copilot|cursor|gemini|chatbots?|bots?|language\s+models?|models?|assistants?|agents?|crawlers?|summari[sz]ers?|reviewers?|contributors?|readers?|systems?)\b`
	modelNounBare = `(?:ai|llms?|language\s+models?|(?:ai\s+)?models?|(?:ai\s+)?assistants?|(?:ai\s+)?agents?|(?:coding\s+)?agents?|bots?|chatbots?|summari[sz]ers?|crawlers?)`
	// overrides lists, by script, an override verb ("ignore", "forget",
	// "no longer follow"), an "instructions" noun, the verbs that follow
	// their noun ("las reglas ya no aplican", "指示はすべて無視") and
	// the anchors (stems; Cyrillic without its first letter, which may be
	// a capital) that a chunk must hold before the expression runs. One
	// expression per script keeps each small enough for the regexp
	// package's fast matcher.
	latinVerbs = `ignora|ignore[zr]?|ignores|ignorier\w*|olvida\w*|olvide|descarta|omite|no\s+sigas|no\s+sigan|no\s+obedezcas|ya\s+no\s+(?:aplican|valen|son\s+v[aá]lidas)|deja\s+de\s+seguir|haz\s+caso\s+omiso|oublie[zr]?|ne\s+tiens?\s+plus\s+compte|ne\s+tenez\s+plus\s+compte|ne\s+suis\s+plus|ne\s+respecte[zr]?\s+plus|n'ob[ée]is\s+plus|ne\s+s'appliquent\s+plus|vergiss|vergessen|missacht\w*|nicht\s+mehr|gelten\s+nicht|befolge\s+\w+\s+nicht|dimentica\w*|non\s+seguire|non\s+rispettare|esque[çc]a|desconsidere|n[ãa]o\s+obede[çc]a|n[ãa]o\s+siga|deixe\s+de\s+seguir|negeer|vergeet|zignoruj|ignoruj|zapomnij|nie\s+stosuj|dikkate\s+alma|yok\s+say|unut|g[öo]rmezden\s+gel`
	latinNouns = `instrucciones|indicaciones|reglas|[óo]rdenes|directrices|lo\s+que\s+te\s+dijeron|consignes|r[èe]gles|directives|instructions|anweisungen|instruktionen|regeln|vorgaben|befehle|was\s+man\s+dir\s+(?:vorher\s+)?gesagt|istruzioni|regole|indicazioni|instru[çc][õo]es|regras|orienta[çc][õo]es|instructies|regels|opdrachten|instrukcj\w*|polece\w*|zasad\w*|talimat\w*|komut\w*|kural\w*`
	latinPost  = `ya\s+no\s+(?:aplican|valen|son\s+v[aá]lidas)|ne\s+s'appliquent\s+plus|gelten\s+nicht|nicht\s+mehr|non\s+valgono\s+pi[uù]|n[ãa]o\s+se\s+aplicam|niet\s+meer|dikkate\s+alma|yok\s+say|g[öo]rmezden\s+gel|unut`
	latinVerbA = "ignor|olvid|descart|omit|sigas|sigan|obedezc|aplican|valen|deja|caso|oubli|tiens|tenez|suis|respect|obéis|obeis|appliqu|vergiss|vergessen|missacht|mehr|gelten|befolg|dimentic|seguire|rispett|valgono|esque|desconsider|obedeç|obedec|siga|deixe|aplicam|negeer|vergeet|niet|zignoruj|ignoruj|zapomnij|stosuj|dikkate|yok|unut|görmezden|gormezden"
	latinNounA = "instruc|indicac|regla|orden|órden|directri|dijeron|consign|règle|regle|directive|anweis|instrukt|regel|vorgab|befehl|gesagt|istruz|regol|indicaz|instru|regra|orienta|opdracht|polece|zasad|talimat|komut|kural"
	// latinWordA are short words of those languages that English text
	// lacks, so that "ignore ... instructions" in English does not run
	// the expression (the English phrases have read it already).
	latinWordA = "las|los|les|des|die|der|das|todas|todo|toutes|tous|alle|tutte|tutti|todos|je|het|wszystkie|tüm|vos|tes|tus|sus|deine|ihre|suas|tuas|nicht|nie|não|nao|pas|plus|mehr|sigas|tiens|tenez|tienes|dir|ti|te|tu"
	cyrVerbs   = `игнорир\w*|проигнорир\w*|забудь\w*|не\s+следуй\w*|не\s+обращай\w*|отмени\w*|не\s+выполняй\w*|ігноруй\w*`
	cyrNouns   = `инструкци\w*|указани\w*|правил\w*|команд\w*|что\s+тебе\s+говорили|інструкці\w*|вказівк\w*`
	cyrVerbA   = "гнорир|абудь|следуй|обращай|тмени|выполняй|гноруй"
	cyrNounA   = "нструкц|казани|равил|оманд|говорили|казівк"
	cjkVerbs   = `忽略|无视|忽视|忘记|忘掉|不要遵守|不要理会|抛开|作废|不再遵守|无需遵守|無視|忘れ|従う必要はもうありません|従わない|무시|잊어`
	cjkNouns   = `指令|指示|说明|提示|规则|規則|命令|要求|设定|ルール|プロンプト|지시|지침|명령|규칙`
	otherVerbs = `تجاهل|انس|अनदेखा|भूल`
	otherNouns = `التعليمات|الأوامر|निर्देश\w*`

	modelVocativeAnchors = "asist|assist|ia|ki|ai|zek|modelu|sprachmodell|нейросет|модель|ии|助手|给正在读|アシスタント|ai|어시스턴트|المساعد|एआई"
	// modelVocatives address the model in other languages: "nota para el
	// asistente", "IA qui lis cette page", "Hinweis an die KI", "AIへ".
	modelVocatives = `(?:nota|mensaje|instrucci[oó]n(?:es)?|aviso)\s+(?:prioritaria\s+)?para\s+(?:el|la|los|las)?\s*(?:asistente|agentes?\s+de\s+ia|ia|modelo)|\bia\s+qui\s+lis|pour\s+l'(?:assistant|ia)\b|(?:hinweis|nachricht|anweisung)\s+an\s+(?:die\s+ki|den\s+assistenten|das\s+sprachmodell)|messaggio\s+per\s+l'assistente|aten[çc][ãa]o,?\s+assistente|para\s+o\s+assistente|aan\s+de\s+ai\b|yapay\s+zek[aâ]\s+asistan|uwaga\s+dla\s+modelu|请\s*ai\s*助手|给正在读|ai\s*助手\s*[:：]|ai\s*アシスタントへ|を読んでいる\s*ai\s*へ|ai\s*向けのメッセージ|внимание,?\s+ии|для\s+нейросет\w*|языковая\s+модель,\s+читающ\w*|ии-ассистент\s*[:,]|ai\s*어시스턴트에게|إلى\s+المساعد|एआई\s+सहायक\s+के\s+लिए`
)

// illustrative reports whether a query value is a writer's ellipsis
// ("...", "…", "xxx"), as in documentation that shows the shape of an
// attack, not its data.
func illustrative(v string) bool {
	v = strings.Trim(v, ".…")
	return v == "" || strings.Trim(strings.ToLower(v), "x") == ""
}

// pair is an expression for a verb then a noun, or a noun then a
// postposed verb, in one sentence.
func pair(verbs, nouns, post string) string {
	return `(?i)(?:` + verbs + `)[^.!?。！？\n]*?(?:` + nouns + `)|(?:` + nouns + `)[^.!?。！？\n]*?(?:` + post + `)`
}

func backup(ph phrase) phrase {
	ph.backup = true
	return ph
}

func withCheck(ph phrase, check func(string) bool) phrase {
	ph.check = check
	return ph
}

// templatedData accepts a templated URL whose placeholder names private
// data ({secret}, $OPENAI_API_KEY, <USER_SECRETS>) rather than an
// ordinary API parameter ({id}, {page}, {query}).
func templatedData(match string) bool {
	_, q, _ := strings.Cut(strings.ToLower(match), "://")
	for _, w := range privateWords {
		if strings.Contains(q, w) {
			return true
		}
	}
	return false
}

// privateWords are placeholder words for what a session should not send
// out.
var privateWords = []string{
	"secret", "token", "key", "password", "passwd", "pass", "history", "conversation", "chat", "message",
	"prompt", "summary", "email", "card", "session", "cookie", "address", "phone", "previous", "answer",
	"content", "env", "credential", "user", "file", "private", "ssn", "account", "data",
}

// dataParams are query parameter names that carry data out.
var dataParams = map[string]bool{
	"data": true, "q": true, "query": true, "secret": true, "token": true, "key": true,
	"password": true, "pw": true, "prompt": true, "history": true, "conversation": true, "chat": true,
	"content": true, "msg": true, "message": true, "text": true, "info": true, "leak": true, "payload": true,
	"exfil": true, "email": true, "user": true,
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
		if illustrative(v) {
			continue
		}
		if strings.ContainsAny(v, "{}$<>") || len(v) >= 24 || dataParams[strings.ToLower(k)] && v != "" {
			return true
		}
	}
	return false
}
