import{b as Xt,c as Jt}from"./chunk-QU7PWQPQ.js";import{$ as Ut,A as Nt,D as Bt,E as Ft,F as Pt,G as Gt,H as Yt,I as Vt,J as Mt,K as N,O as xe,P as B,T as Wt,X as jt,a as T,aa as zt,ba as Ht,c as $t,ca as Kt,z as W}from"./chunk-XMDG4GJO.js";import{a as h}from"./chunk-EIBFAW37.js";import{b as ve}from"./chunk-6DHFEWGX.js";var qt=h((t,e)=>{let i;return e==="sandbox"&&(i=B("#i"+t)),(e==="sandbox"?B(i.nodes()[0].contentDocument.body):B("body")).select(`[id="${t}"]`)},"getDiagramElement");var Qt=h((t,e,i,s)=>{t.attr("class",i);let{width:o,height:l,x:f,y:g}=De(t,e);Nt(t,l,o,s);let a=Ce(f,g,o,l,e);t.attr("viewBox",a),T.debug(`viewBox configured: ${a} with padding: ${e}`)},"setupViewPortForSVG"),De=h((t,e)=>{let i=t.node()?.getBBox()||{width:0,height:0,x:0,y:0};return{width:i.width+e*2,height:i.height+e*2,x:i.x,y:i.y}},"calculateDimensionsWithPadding"),Ce=h((t,e,i,s,o)=>`${t-o} ${e-o} ${i} ${s}`,"createViewBox");var Ae=ve(xe(),1);var Zt=h(()=>{let t=B(".mermaidTooltip");return t.empty()&&(t=B("body").append("div").attr("class","mermaidTooltip").style("opacity",0).style("position","absolute").style("text-align","center").style("max-width","200px").style("padding","2px").style("font-size","12px").style("background","#ffffde").style("border","1px solid #333").style("border-radius","2px").style("pointer-events","none").style("z-index","100")),t},"createTooltip");var Ct=(function(){var t=h(function(M,c,u,n){for(u=u||{},n=M.length;n--;u[M[n]]=c);return u},"o"),e=[1,2],i=[1,3],s=[1,4],o=[2,4],l=[1,9],f=[1,11],g=[1,16],a=[1,17],m=[1,18],b=[1,19],A=[1,33],w=[1,20],O=[1,21],v=[1,22],p=[1,23],L=[1,24],x=[1,26],F=[1,27],I=[1,28],P=[1,29],_=[1,30],H=[1,31],at=[1,32],nt=[1,35],ot=[1,36],lt=[1,37],ct=[1,38],K=[1,34],y=[1,4,5,16,17,19,21,22,24,25,26,27,28,29,33,35,37,38,41,45,48,51,52,53,54,57],ht=[1,4,5,14,15,16,17,19,21,22,24,25,26,27,28,29,33,35,37,38,39,40,41,45,48,51,52,53,54,57],It=[4,5,16,17,19,21,22,24,25,26,27,28,29,33,35,37,38,41,45,48,51,52,53,54,57],bt={trace:h(function(){},"trace"),yy:{},symbols_:{error:2,start:3,SPACE:4,NL:5,SD:6,document:7,line:8,statement:9,classDefStatement:10,styleStatement:11,cssClassStatement:12,idStatement:13,DESCR:14,"-->":15,HIDE_EMPTY:16,scale:17,WIDTH:18,COMPOSIT_STATE:19,STRUCT_START:20,STRUCT_STOP:21,STATE_DESCR:22,AS:23,ID:24,FORK:25,JOIN:26,CHOICE:27,CONCURRENT:28,note:29,notePosition:30,NOTE_TEXT:31,direction:32,acc_title:33,acc_title_value:34,acc_descr:35,acc_descr_value:36,acc_descr_multiline_value:37,CLICK:38,STRING:39,HREF:40,classDef:41,CLASSDEF_ID:42,CLASSDEF_STYLEOPTS:43,DEFAULT:44,style:45,STYLE_IDS:46,STYLEDEF_STYLEOPTS:47,class:48,CLASSENTITY_IDS:49,STYLECLASS:50,direction_tb:51,direction_bt:52,direction_rl:53,direction_lr:54,eol:55,";":56,EDGE_STATE:57,STYLE_SEPARATOR:58,left_of:59,right_of:60,$accept:0,$end:1},terminals_:{2:"error",4:"SPACE",5:"NL",6:"SD",14:"DESCR",15:"-->",16:"HIDE_EMPTY",17:"scale",18:"WIDTH",19:"COMPOSIT_STATE",20:"STRUCT_START",21:"STRUCT_STOP",22:"STATE_DESCR",23:"AS",24:"ID",25:"FORK",26:"JOIN",27:"CHOICE",28:"CONCURRENT",29:"note",31:"NOTE_TEXT",33:"acc_title",34:"acc_title_value",35:"acc_descr",36:"acc_descr_value",37:"acc_descr_multiline_value",38:"CLICK",39:"STRING",40:"HREF",41:"classDef",42:"CLASSDEF_ID",43:"CLASSDEF_STYLEOPTS",44:"DEFAULT",45:"style",46:"STYLE_IDS",47:"STYLEDEF_STYLEOPTS",48:"class",49:"CLASSENTITY_IDS",50:"STYLECLASS",51:"direction_tb",52:"direction_bt",53:"direction_rl",54:"direction_lr",56:";",57:"EDGE_STATE",58:"STYLE_SEPARATOR",59:"left_of",60:"right_of"},productions_:[0,[3,2],[3,2],[3,2],[7,0],[7,2],[8,2],[8,1],[8,1],[9,1],[9,1],[9,1],[9,1],[9,2],[9,3],[9,4],[9,1],[9,2],[9,1],[9,4],[9,3],[9,6],[9,1],[9,1],[9,1],[9,1],[9,4],[9,4],[9,1],[9,2],[9,2],[9,1],[9,5],[9,5],[10,3],[10,3],[11,3],[12,3],[32,1],[32,1],[32,1],[32,1],[55,1],[55,1],[13,1],[13,1],[13,3],[13,3],[30,1],[30,1]],performAction:h(function(c,u,n,S,k,r,X){var d=r.length-1;switch(k){case 3:return S.setRootDoc(r[d]),r[d];break;case 4:this.$=[];break;case 5:r[d]!="nl"&&(r[d-1].push(r[d]),this.$=r[d-1]);break;case 6:case 7:this.$=r[d];break;case 8:this.$="nl";break;case 12:this.$=r[d];break;case 13:let ut=r[d-1];ut.description=S.trimColon(r[d]),this.$=ut;break;case 14:this.$={stmt:"relation",state1:r[d-2],state2:r[d]};break;case 15:let ft=S.trimColon(r[d]);this.$={stmt:"relation",state1:r[d-3],state2:r[d-1],description:ft};break;case 19:this.$={stmt:"state",id:r[d-3],type:"default",description:"",doc:r[d-1]};break;case 20:var G=r[d],Y=r[d-2].trim();if(r[d].match(":")){var Z=r[d].split(":");G=Z[0],Y=[Y,Z[1]]}this.$={stmt:"state",id:G,type:"default",description:Y};break;case 21:this.$={stmt:"state",id:r[d-3],type:"default",description:r[d-5],doc:r[d-1]};break;case 22:this.$={stmt:"state",id:r[d],type:"fork"};break;case 23:this.$={stmt:"state",id:r[d],type:"join"};break;case 24:this.$={stmt:"state",id:r[d],type:"choice"};break;case 25:this.$={stmt:"state",id:S.getDividerId(),type:"divider"};break;case 26:this.$={stmt:"state",id:r[d-1].trim(),note:{position:r[d-2].trim(),text:r[d].trim()}};break;case 29:this.$=r[d].trim(),S.setAccTitle(this.$);break;case 30:case 31:this.$=r[d].trim(),S.setAccDescription(this.$);break;case 32:this.$={stmt:"click",id:r[d-3],url:r[d-2],tooltip:r[d-1]};break;case 33:this.$={stmt:"click",id:r[d-3],url:r[d-1],tooltip:""};break;case 34:case 35:this.$={stmt:"classDef",id:r[d-1].trim(),classes:r[d].trim()};break;case 36:this.$={stmt:"style",id:r[d-1].trim(),styleClass:r[d].trim()};break;case 37:this.$={stmt:"applyClass",id:r[d-1].trim(),styleClass:r[d].trim()};break;case 38:S.setDirection("TB"),this.$={stmt:"dir",value:"TB"};break;case 39:S.setDirection("BT"),this.$={stmt:"dir",value:"BT"};break;case 40:S.setDirection("RL"),this.$={stmt:"dir",value:"RL"};break;case 41:S.setDirection("LR"),this.$={stmt:"dir",value:"LR"};break;case 44:case 45:this.$={stmt:"state",id:r[d].trim(),type:"default",description:""};break;case 46:this.$={stmt:"state",id:r[d-2].trim(),classes:[r[d].trim()],type:"default",description:""};break;case 47:this.$={stmt:"state",id:r[d-2].trim(),classes:[r[d].trim()],type:"default",description:""};break}},"anonymous"),table:[{3:1,4:e,5:i,6:s},{1:[3]},{3:5,4:e,5:i,6:s},{3:6,4:e,5:i,6:s},t([1,4,5,16,17,19,22,24,25,26,27,28,29,33,35,37,38,41,45,48,51,52,53,54,57],o,{7:7}),{1:[2,1]},{1:[2,2]},{1:[2,3],4:l,5:f,8:8,9:10,10:12,11:13,12:14,13:15,16:g,17:a,19:m,22:b,24:A,25:w,26:O,27:v,28:p,29:L,32:25,33:x,35:F,37:I,38:P,41:_,45:H,48:at,51:nt,52:ot,53:lt,54:ct,57:K},t(y,[2,5]),{9:39,10:12,11:13,12:14,13:15,16:g,17:a,19:m,22:b,24:A,25:w,26:O,27:v,28:p,29:L,32:25,33:x,35:F,37:I,38:P,41:_,45:H,48:at,51:nt,52:ot,53:lt,54:ct,57:K},t(y,[2,7]),t(y,[2,8]),t(y,[2,9]),t(y,[2,10]),t(y,[2,11]),t(y,[2,12],{14:[1,40],15:[1,41]}),t(y,[2,16]),{18:[1,42]},t(y,[2,18],{20:[1,43]}),{23:[1,44]},t(y,[2,22]),t(y,[2,23]),t(y,[2,24]),t(y,[2,25]),{30:45,31:[1,46],59:[1,47],60:[1,48]},t(y,[2,28]),{34:[1,49]},{36:[1,50]},t(y,[2,31]),{13:51,24:A,57:K},{42:[1,52],44:[1,53]},{46:[1,54]},{49:[1,55]},t(ht,[2,44],{58:[1,56]}),t(ht,[2,45],{58:[1,57]}),t(y,[2,38]),t(y,[2,39]),t(y,[2,40]),t(y,[2,41]),t(y,[2,6]),t(y,[2,13]),{13:58,24:A,57:K},t(y,[2,17]),t(It,o,{7:59}),{24:[1,60]},{24:[1,61]},{23:[1,62]},{24:[2,48]},{24:[2,49]},t(y,[2,29]),t(y,[2,30]),{39:[1,63],40:[1,64]},{43:[1,65]},{43:[1,66]},{47:[1,67]},{50:[1,68]},{24:[1,69]},{24:[1,70]},t(y,[2,14],{14:[1,71]}),{4:l,5:f,8:8,9:10,10:12,11:13,12:14,13:15,16:g,17:a,19:m,21:[1,72],22:b,24:A,25:w,26:O,27:v,28:p,29:L,32:25,33:x,35:F,37:I,38:P,41:_,45:H,48:at,51:nt,52:ot,53:lt,54:ct,57:K},t(y,[2,20],{20:[1,73]}),{31:[1,74]},{24:[1,75]},{39:[1,76]},{39:[1,77]},t(y,[2,34]),t(y,[2,35]),t(y,[2,36]),t(y,[2,37]),t(ht,[2,46]),t(ht,[2,47]),t(y,[2,15]),t(y,[2,19]),t(It,o,{7:78}),t(y,[2,26]),t(y,[2,27]),{5:[1,79]},{5:[1,80]},{4:l,5:f,8:8,9:10,10:12,11:13,12:14,13:15,16:g,17:a,19:m,21:[1,81],22:b,24:A,25:w,26:O,27:v,28:p,29:L,32:25,33:x,35:F,37:I,38:P,41:_,45:H,48:at,51:nt,52:ot,53:lt,54:ct,57:K},t(y,[2,32]),t(y,[2,33]),t(y,[2,21])],defaultActions:{5:[2,1],6:[2,2],47:[2,48],48:[2,49]},parseError:h(function(c,u){if(u.recoverable)this.trace(c);else{var n=new Error(c);throw n.hash=u,n}},"parseError"),parse:h(function(c){var u=this,n=[0],S=[],k=[null],r=[],X=this.table,d="",G=0,Y=0,Z=0,ut=2,ft=1,Te=r.slice.call(arguments,1),E=Object.create(this.lexer),U={yy:{}};for(var kt in this.yy)Object.prototype.hasOwnProperty.call(this.yy,kt)&&(U.yy[kt]=this.yy[kt]);E.setInput(c,U.yy),U.yy.lexer=E,U.yy.parser=this,typeof E.yylloc>"u"&&(E.yylloc={});var Tt=E.yylloc;r.push(Tt);var Ee=E.options&&E.options.ranges;typeof U.yy.parseError=="function"?this.parseError=U.yy.parseError:this.parseError=Object.getPrototypeOf(this).parseError;function _e(R){n.length=n.length-2*R,k.length=k.length-R,r.length=r.length-R}h(_e,"popStack");function Rt(){var R;return R=S.pop()||E.lex()||ft,typeof R!="number"&&(R instanceof Array&&(S=R,R=S.pop()),R=u.symbols_[R]||R),R}h(Rt,"lex");for(var D,Et,z,$,ns,_t,J={},pt,V,Ot,gt;;){if(z=n[n.length-1],this.defaultActions[z]?$=this.defaultActions[z]:((D===null||typeof D>"u")&&(D=Rt()),$=X[z]&&X[z][D]),typeof $>"u"||!$.length||!$[0]){var vt="";gt=[];for(pt in X[z])this.terminals_[pt]&&pt>ut&&gt.push("'"+this.terminals_[pt]+"'");E.showPosition?vt="Parse error on line "+(G+1)+`:
`+E.showPosition()+`
Expecting `+gt.join(", ")+", got '"+(this.terminals_[D]||D)+"'":vt="Parse error on line "+(G+1)+": Unexpected "+(D==ft?"end of input":"'"+(this.terminals_[D]||D)+"'"),this.parseError(vt,{text:E.match,token:this.terminals_[D]||D,line:E.yylineno,loc:Tt,expected:gt})}if($[0]instanceof Array&&$.length>1)throw new Error("Parse Error: multiple actions possible at state: "+z+", token: "+D);switch($[0]){case 1:n.push(D),k.push(E.yytext),r.push(E.yylloc),n.push($[1]),D=null,Et?(D=Et,Et=null):(Y=E.yyleng,d=E.yytext,G=E.yylineno,Tt=E.yylloc,Z>0&&Z--);break;case 2:if(V=this.productions_[$[1]][1],J.$=k[k.length-V],J._$={first_line:r[r.length-(V||1)].first_line,last_line:r[r.length-1].last_line,first_column:r[r.length-(V||1)].first_column,last_column:r[r.length-1].last_column},Ee&&(J._$.range=[r[r.length-(V||1)].range[0],r[r.length-1].range[1]]),_t=this.performAction.apply(J,[d,Y,G,U.yy,$[1],k,r].concat(Te)),typeof _t<"u")return _t;V&&(n=n.slice(0,-1*V*2),k=k.slice(0,-1*V),r=r.slice(0,-1*V)),n.push(this.productions_[$[1]][0]),k.push(J.$),r.push(J._$),Ot=X[n[n.length-2]][n[n.length-1]],n.push(Ot);break;case 3:return!0}}return!0},"parse")},ke=(function(){var M={EOF:1,parseError:h(function(u,n){if(this.yy.parser)this.yy.parser.parseError(u,n);else throw new Error(u)},"parseError"),setInput:h(function(c,u){return this.yy=u||this.yy||{},this._input=c,this._more=this._backtrack=this.done=!1,this.yylineno=this.yyleng=0,this.yytext=this.matched=this.match="",this.conditionStack=["INITIAL"],this.yylloc={first_line:1,first_column:0,last_line:1,last_column:0},this.options.ranges&&(this.yylloc.range=[0,0]),this.offset=0,this},"setInput"),input:h(function(){var c=this._input[0];this.yytext+=c,this.yyleng++,this.offset++,this.match+=c,this.matched+=c;var u=c.match(/(?:\r\n?|\n).*/g);return u?(this.yylineno++,this.yylloc.last_line++):this.yylloc.last_column++,this.options.ranges&&this.yylloc.range[1]++,this._input=this._input.slice(1),c},"input"),unput:h(function(c){var u=c.length,n=c.split(/(?:\r\n?|\n)/g);this._input=c+this._input,this.yytext=this.yytext.substr(0,this.yytext.length-u),this.offset-=u;var S=this.match.split(/(?:\r\n?|\n)/g);this.match=this.match.substr(0,this.match.length-1),this.matched=this.matched.substr(0,this.matched.length-1),n.length-1&&(this.yylineno-=n.length-1);var k=this.yylloc.range;return this.yylloc={first_line:this.yylloc.first_line,last_line:this.yylineno+1,first_column:this.yylloc.first_column,last_column:n?(n.length===S.length?this.yylloc.first_column:0)+S[S.length-n.length].length-n[0].length:this.yylloc.first_column-u},this.options.ranges&&(this.yylloc.range=[k[0],k[0]+this.yyleng-u]),this.yyleng=this.yytext.length,this},"unput"),more:h(function(){return this._more=!0,this},"more"),reject:h(function(){if(this.options.backtrack_lexer)this._backtrack=!0;else return this.parseError("Lexical error on line "+(this.yylineno+1)+`. You can only invoke reject() in the lexer when the lexer is of the backtracking persuasion (options.backtrack_lexer = true).
`+this.showPosition(),{text:"",token:null,line:this.yylineno});return this},"reject"),less:h(function(c){this.unput(this.match.slice(c))},"less"),pastInput:h(function(){var c=this.matched.substr(0,this.matched.length-this.match.length);return(c.length>20?"...":"")+c.substr(-20).replace(/\n/g,"")},"pastInput"),upcomingInput:h(function(){var c=this.match;return c.length<20&&(c+=this._input.substr(0,20-c.length)),(c.substr(0,20)+(c.length>20?"...":"")).replace(/\n/g,"")},"upcomingInput"),showPosition:h(function(){var c=this.pastInput(),u=new Array(c.length+1).join("-");return c+this.upcomingInput()+`
`+u+"^"},"showPosition"),test_match:h(function(c,u){var n,S,k;if(this.options.backtrack_lexer&&(k={yylineno:this.yylineno,yylloc:{first_line:this.yylloc.first_line,last_line:this.last_line,first_column:this.yylloc.first_column,last_column:this.yylloc.last_column},yytext:this.yytext,match:this.match,matches:this.matches,matched:this.matched,yyleng:this.yyleng,offset:this.offset,_more:this._more,_input:this._input,yy:this.yy,conditionStack:this.conditionStack.slice(0),done:this.done},this.options.ranges&&(k.yylloc.range=this.yylloc.range.slice(0))),S=c[0].match(/(?:\r\n?|\n).*/g),S&&(this.yylineno+=S.length),this.yylloc={first_line:this.yylloc.last_line,last_line:this.yylineno+1,first_column:this.yylloc.last_column,last_column:S?S[S.length-1].length-S[S.length-1].match(/\r?\n?/)[0].length:this.yylloc.last_column+c[0].length},this.yytext+=c[0],this.match+=c[0],this.matches=c,this.yyleng=this.yytext.length,this.options.ranges&&(this.yylloc.range=[this.offset,this.offset+=this.yyleng]),this._more=!1,this._backtrack=!1,this._input=this._input.slice(c[0].length),this.matched+=c[0],n=this.performAction.call(this,this.yy,this,u,this.conditionStack[this.conditionStack.length-1]),this.done&&this._input&&(this.done=!1),n)return n;if(this._backtrack){for(var r in k)this[r]=k[r];return!1}return!1},"test_match"),next:h(function(){if(this.done)return this.EOF;this._input||(this.done=!0);var c,u,n,S;this._more||(this.yytext="",this.match="");for(var k=this._currentRules(),r=0;r<k.length;r++)if(n=this._input.match(this.rules[k[r]]),n&&(!u||n[0].length>u[0].length)){if(u=n,S=r,this.options.backtrack_lexer){if(c=this.test_match(n,k[r]),c!==!1)return c;if(this._backtrack){u=!1;continue}else return!1}else if(!this.options.flex)break}return u?(c=this.test_match(u,k[S]),c!==!1?c:!1):this._input===""?this.EOF:this.parseError("Lexical error on line "+(this.yylineno+1)+`. Unrecognized text.
`+this.showPosition(),{text:"",token:null,line:this.yylineno})},"next"),lex:h(function(){var u=this.next();return u||this.lex()},"lex"),begin:h(function(u){this.conditionStack.push(u)},"begin"),popState:h(function(){var u=this.conditionStack.length-1;return u>0?this.conditionStack.pop():this.conditionStack[0]},"popState"),_currentRules:h(function(){return this.conditionStack.length&&this.conditionStack[this.conditionStack.length-1]?this.conditions[this.conditionStack[this.conditionStack.length-1]].rules:this.conditions.INITIAL.rules},"_currentRules"),topState:h(function(u){return u=this.conditionStack.length-1-Math.abs(u||0),u>=0?this.conditionStack[u]:"INITIAL"},"topState"),pushState:h(function(u){this.begin(u)},"pushState"),stateStackSize:h(function(){return this.conditionStack.length},"stateStackSize"),options:{"case-insensitive":!0},performAction:h(function(u,n,S,k){function r(){let d=n.yytext.indexOf("%%");if(d===0)return!1;if(d>0){let G=n.yytext.slice(0,d),Y=n.yytext.slice(d);Y&&u.lexer.unput(Y),n.yytext=G}return!0}h(r,"processId");var X=k;switch(S){case 0:return 38;case 1:return 40;case 2:return 39;case 3:return 44;case 4:return 51;case 5:return 52;case 6:return 53;case 7:return 54;case 8:return 5;case 9:break;case 10:break;case 11:break;case 12:break;case 13:return this.pushState("SCALE"),17;break;case 14:return 18;case 15:this.popState();break;case 16:return this.begin("acc_title"),33;break;case 17:return this.popState(),"acc_title_value";break;case 18:return this.begin("acc_descr"),35;break;case 19:return this.popState(),"acc_descr_value";break;case 20:this.begin("acc_descr_multiline");break;case 21:this.popState();break;case 22:return"acc_descr_multiline_value";case 23:return this.pushState("CLASSDEF"),41;break;case 24:return this.popState(),this.pushState("CLASSDEFID"),"DEFAULT_CLASSDEF_ID";break;case 25:return this.popState(),this.pushState("CLASSDEFID"),42;break;case 26:return this.popState(),43;break;case 27:return this.pushState("CLASS"),48;break;case 28:return this.popState(),this.pushState("CLASS_STYLE"),49;break;case 29:return this.popState(),50;break;case 30:return this.pushState("STYLE"),45;break;case 31:return this.popState(),this.pushState("STYLEDEF_STYLES"),46;break;case 32:return this.popState(),47;break;case 33:return this.pushState("SCALE"),17;break;case 34:return 18;case 35:this.popState();break;case 36:this.pushState("STATE");break;case 37:return this.popState(),n.yytext=n.yytext.slice(0,-8).trim(),25;break;case 38:return this.popState(),n.yytext=n.yytext.slice(0,-8).trim(),26;break;case 39:return this.popState(),n.yytext=n.yytext.slice(0,-10).trim(),27;break;case 40:return this.popState(),n.yytext=n.yytext.slice(0,-8).trim(),25;break;case 41:return this.popState(),n.yytext=n.yytext.slice(0,-8).trim(),26;break;case 42:return this.popState(),n.yytext=n.yytext.slice(0,-10).trim(),27;break;case 43:return 51;case 44:return 52;case 45:return 53;case 46:return 54;case 47:this.pushState("STATE_STRING");break;case 48:return this.pushState("STATE_ID"),"AS";break;case 49:if(!r())return;return this.popState(),"ID";break;case 50:this.popState();break;case 51:return"STATE_DESCR";case 52:throw new Error('Error: State name must be a single word. Found: "'+n.yytext.trim()+'"');case 53:return 19;case 54:this.popState();break;case 55:return this.popState(),this.pushState("struct"),20;break;case 56:return this.popState(),21;break;case 57:break;case 58:return this.begin("NOTE"),29;break;case 59:return this.popState(),this.pushState("NOTE_ID"),59;break;case 60:return this.popState(),this.pushState("NOTE_ID"),60;break;case 61:this.popState(),this.pushState("FLOATING_NOTE");break;case 62:return this.popState(),this.pushState("FLOATING_NOTE_ID"),"AS";break;case 63:break;case 64:return"NOTE_TEXT";case 65:if(!r())return;return this.popState(),"ID";break;case 66:if(!r())return;return this.popState(),this.pushState("NOTE_TEXT"),24;break;case 67:return this.popState(),n.yytext=n.yytext.substr(2).trim(),31;break;case 68:return this.popState(),n.yytext=n.yytext.slice(0,-8).trim(),31;break;case 69:return 6;case 70:return 6;case 71:return 16;case 72:return 57;case 73:return r()?24:void 0;case 74:return n.yytext=n.yytext.trim(),14;break;case 75:return 15;case 76:return 28;case 77:return 58;case 78:return 5;case 79:return"INVALID"}},"anonymous"),rules:[/^(?:click\b)/i,/^(?:href\b)/i,/^(?:"[^"]*")/i,/^(?:default\b)/i,/^(?:.*direction\s+TB[^\n]*)/i,/^(?:.*direction\s+BT[^\n]*)/i,/^(?:.*direction\s+RL[^\n]*)/i,/^(?:.*direction\s+LR[^\n]*)/i,/^(?:[\n]+)/i,/^(?:[\s]+)/i,/^(?:((?!\n)\s)+)/i,/^(?:#[^\n]*)/i,/^(?:%%(?!\{)[^\n]*)/i,/^(?:scale\s+)/i,/^(?:\d+)/i,/^(?:\s+width\b)/i,/^(?:accTitle\s*:\s*)/i,/^(?:(?!\n||)*[^\n]*)/i,/^(?:accDescr\s*:\s*)/i,/^(?:(?!\n||)*[^\n]*)/i,/^(?:accDescr\s*\{\s*)/i,/^(?:[\}])/i,/^(?:[^\}]*)/i,/^(?:classDef\s+)/i,/^(?:DEFAULT\s+)/i,/^(?:\w+\s+)/i,/^(?:[^\n]*)/i,/^(?:class\s+)/i,/^(?:(\w+)+((,\s*\w+)*))/i,/^(?:[^\n]*)/i,/^(?:style\s+)/i,/^(?:[\w,]+\s+)/i,/^(?:[^\n]*)/i,/^(?:scale\s+)/i,/^(?:\d+)/i,/^(?:\s+width\b)/i,/^(?:state\s+)/i,/^(?:.*<<fork>>)/i,/^(?:.*<<join>>)/i,/^(?:.*<<choice>>)/i,/^(?:.*\[\[fork\]\])/i,/^(?:.*\[\[join\]\])/i,/^(?:.*\[\[choice\]\])/i,/^(?:.*direction\s+TB[^\n]*)/i,/^(?:.*direction\s+BT[^\n]*)/i,/^(?:.*direction\s+RL[^\n]*)/i,/^(?:.*direction\s+LR[^\n]*)/i,/^(?:["])/i,/^(?:\s*as\s+)/i,/^(?:[^\n\{]*)/i,/^(?:["])/i,/^(?:[^"]*)/i,/^(?:\w+\s+\w+.*?\{)/i,/^(?:[^\n\s\{]+)/i,/^(?:\n)/i,/^(?:\{)/i,/^(?:\})/i,/^(?:[\n])/i,/^(?:note\s+)/i,/^(?:left of\b)/i,/^(?:right of\b)/i,/^(?:")/i,/^(?:\s*as\s*)/i,/^(?:["])/i,/^(?:[^"]*)/i,/^(?:[^\n]*)/i,/^(?:\s*[^:\n\s\-]+)/i,/^(?:\s*:[^:\n;]+)/i,/^(?:[\s\S]*?\n\s*end note\b)/i,/^(?:stateDiagram\s+)/i,/^(?:stateDiagram-v2\s+)/i,/^(?:hide empty description\b)/i,/^(?:\[\*\])/i,/^(?:[^:\n\s\-\{]+)/i,/^(?:\s*:(?:[^:\n;]|:[^:\n;])+)/i,/^(?:-->)/i,/^(?:--)/i,/^(?::::)/i,/^(?:$)/i,/^(?:.)/i],conditions:{LINE:{rules:[10,11,12],inclusive:!1},struct:{rules:[10,11,12,23,27,30,36,43,44,45,46,56,57,58,72,73,74,75,76,77],inclusive:!1},FLOATING_NOTE_ID:{rules:[65],inclusive:!1},FLOATING_NOTE:{rules:[62,63,64],inclusive:!1},NOTE_TEXT:{rules:[67,68],inclusive:!1},NOTE_ID:{rules:[66],inclusive:!1},NOTE:{rules:[59,60,61],inclusive:!1},STYLEDEF_STYLEOPTS:{rules:[],inclusive:!1},STYLEDEF_STYLES:{rules:[32],inclusive:!1},STYLE_IDS:{rules:[],inclusive:!1},STYLE:{rules:[31],inclusive:!1},CLASS_STYLE:{rules:[29],inclusive:!1},CLASS:{rules:[28],inclusive:!1},CLASSDEFID:{rules:[26],inclusive:!1},CLASSDEF:{rules:[24,25],inclusive:!1},acc_descr_multiline:{rules:[21,22],inclusive:!1},acc_descr:{rules:[19],inclusive:!1},acc_title:{rules:[17],inclusive:!1},SCALE:{rules:[14,15,34,35],inclusive:!1},ALIAS:{rules:[],inclusive:!1},STATE_ID:{rules:[49],inclusive:!1},STATE_STRING:{rules:[50,51],inclusive:!1},FORK_STATE:{rules:[],inclusive:!1},STATE:{rules:[10,11,12,37,38,39,40,41,42,47,48,52,53,54,55],inclusive:!1},ID:{rules:[10,11,12],inclusive:!1},INITIAL:{rules:[0,1,2,3,4,5,6,7,8,9,11,12,13,16,18,20,23,27,30,33,36,55,58,69,70,71,72,73,74,75,77,78,79],inclusive:!0}}};return M})();bt.lexer=ke;function dt(){this.yy={}}return h(dt,"Parser"),dt.prototype=bt,bt.Parser=dt,new dt})();Ct.parser=Ct;var we=Ct,Le="TB",ne="TB",te="dir",Q="state",q="root",At="relation",Ie="classDef",Re="style",Oe="applyClass",rt="default",oe="divider",le="fill:none",ce="fill: #333",he="c",de="markdown",ue="normal",xt="rect",Dt="rectWithTitle",$e="stateStart",Ne="stateEnd",wt="divider",ee="roundedWithTitle",Be="note",Fe="noteGroup",it="statediagram",Pe="state",Ge=`${it}-${Pe}`,fe="transition",Ye="note",Ve="note-edge",Me=`${fe} ${Ve}`,We=`${it}-${Ye}`,je="cluster",Ue=`${it}-${je}`,ze="cluster-alt",He=`${it}-${ze}`,pe="parent",ge="note",Ke="state",Lt="----",Xe=`${Lt}${ge}`,se=`${Lt}${pe}`,St=new Map,j=0,ye=0,tt=new Map,Je=h((t,e,i,s)=>{if(t===wt&&i?.id!==void 0&&tt.has(i.id)){let f=tt.get(i.id);return tt.set(e,f),f}let o=ye++,l=s?void 0:o;return tt.set(e,l),l},"colorSlotFor");function mt(t="",e=0,i="",s=Lt){let o=i!==null&&i.length>0?`${s}${i}`:"";return`${Ke}-${t}${o}-${e}`}h(mt,"stateDomId");var qe=h((t,e,i,s,o,l,f,g)=>{T.trace("items",e),e.forEach(a=>{switch(a.stmt){case Q:st(t,a,i,s,o,l,f,g);break;case rt:st(t,a,i,s,o,l,f,g);break;case At:{st(t,a.state1,i,s,o,l,f,g),st(t,a.state2,i,s,o,l,f,g);let m=f==="neo",b={id:"edge"+j,start:a.state1.id,end:a.state2.id,arrowhead:"normal",arrowTypeEnd:m?"arrow_barb_neo":"arrow_barb",style:le,labelStyle:"",label:W.sanitizeText(a.description??"",N()),arrowheadStyle:ce,labelpos:he,labelType:de,thickness:ue,classes:fe,look:f};o.push(b),j++}break}})},"setupDoc"),re=h((t,e=ne)=>{let i=e;if(t.doc)for(let s of t.doc)s.stmt==="dir"&&(i=s.value);return i},"getDir");function et(t,e,i){if(!e.id||e.id==="</join></fork>"||e.id==="</choice>")return;e.cssClasses&&(Array.isArray(e.cssCompiledStyles)||(e.cssCompiledStyles=[]),e.cssClasses.split(" ").forEach(o=>{let l=i.get(o);l&&(e.cssCompiledStyles=[...e.cssCompiledStyles??[],...l.styles])}));let s=t.find(o=>o.id===e.id);s?Object.assign(s,e):t.push(e)}h(et,"insertOrUpdateNode");function Se(t){return t?.classes?.join(" ")??""}h(Se,"getClassesFromDbInfo");function me(t){return t?.styles??[]}h(me,"getStylesFromDbInfo");var st=h((t,e,i,s,o,l,f,g)=>{let a=e.id,m=i.get(a),b=Se(m),A=me(m),w=N(),O=b.trim()!==""||A.length>0;if(T.info("dataFetcher parsedItem",e,m,A),a!=="root"){let v=xt;e.start===!0?v=$e:e.start===!1&&(v=Ne),e.type!==rt&&(v=e.type),St.get(a)||St.set(a,{id:a,shape:v,description:W.sanitizeText(a,w),cssClasses:`${b} ${Ge}`,cssStyles:A});let p=St.get(a);e.description&&(Array.isArray(p.description)?(p.shape=Dt,p.description.push(e.description)):p.description?.length&&p.description.length>0?(p.shape=Dt,p.description===a?p.description=[e.description]:p.description=[p.description,e.description]):(p.shape=xt,p.description=e.description),p.description=W.sanitizeTextOrArray(p.description,w)),p.description?.length===1&&p.shape===Dt&&(p.type==="group"?p.shape=ee:p.shape=xt),!p.type&&e.doc&&(T.info("Setting cluster for XCX",a,re(e)),p.type="group",p.isGroup=!0,p.dir=re(e),p.shape=e.type===oe?wt:ee,p.colorIndex=Je(p.shape,a,t,O),p.cssClasses=`${p.cssClasses} ${Ue} ${l?He:""}`);let L={labelStyle:"",shape:p.shape,label:p.description,cssClasses:p.cssClasses,cssCompiledStyles:[],cssStyles:p.cssStyles,id:a,dir:p.dir,domId:mt(a,j),type:p.type,isGroup:p.type==="group",colorIndex:p.colorIndex,padding:8,rx:10,ry:10,look:f,labelType:"markdown"};if(L.shape===wt&&(L.label=""),t&&t.id!=="root"&&(T.trace("Setting node ",a," to be child of its parent ",t.id),L.parentId=t.id),L.centerLabel=!0,e.note){let x={labelStyle:"",shape:Be,label:e.note.text,labelType:"markdown",cssClasses:We,cssStyles:[],cssCompiledStyles:[],id:a+Xe+"-"+j,domId:mt(a,j,ge),type:"node",isGroup:!1,padding:w.flowchart?.padding,look:f,position:e.note.position},F=a+se,I={labelStyle:"",shape:Fe,label:e.note.text,cssClasses:p.cssClasses,cssStyles:[],id:a+se,domId:mt(a,j,pe),type:"group",isGroup:!0,padding:16,look:f,position:e.note.position};j++,I.id=F,x.parentId=F,et(s,I,g),et(s,x,g),et(s,L,g);let P=a,_=x.id;e.note.position==="left of"&&(P=x.id,_=a),o.push({id:P+"-"+_,start:P,end:_,arrowhead:"none",arrowTypeEnd:"",style:le,labelStyle:"",classes:Me,pattern:"dashed",arrowheadStyle:ce,labelpos:he,labelType:de,thickness:ue,look:f})}else et(s,L,g)}e.doc&&(T.trace("Adding nodes children "),qe(e,e.doc,i,s,o,!l,f,g))},"dataFetcher"),Qe=h(()=>{St.clear(),j=0,ye=0,tt.clear()},"reset"),be=h((t,e=ne)=>{if(!t.doc)return e;let i=e;for(let s of t.doc)s.stmt==="dir"&&(i=s.value);return i},"getDir"),Ze=h(function(t,e){return e.db.getClasses()},"getClasses"),ts=h(async function(t,e,i,s){T.info("REF0:"),T.info("Drawing state diagram (v2)",e);let{securityLevel:o,state:l,layout:f}=N();s.db.extract(s.db.getRootDocV2());let g=s.db.getData(),a=qt(e,o);g.type=s.type,g.layoutAlgorithm=Jt(f),g.nodeSpacing=l?.nodeSpacing||50,g.rankSpacing=l?.rankSpacing||50,N().look==="neo"?g.markers=["barbNeo"]:g.markers=["barb"],g.diagramId=e,await Xt(g,a);let b=8;try{(typeof s.db.getLinks=="function"?s.db.getLinks():new Map).forEach((w,O)=>{let v=typeof O=="string"?O:typeof O?.id=="string"?O.id:"",p=g.nodes.find(_=>_.id===v);if(!v){T.warn("⚠️ Invalid or missing stateId from key:",JSON.stringify(O));return}let L=a.node()?.querySelectorAll("g.node, g.rough-node"),x;if(L?.forEach(_=>{let H=_.textContent?.trim();(_.id===p?.domId||H===v)&&(x=_)}),!x){T.warn("⚠️ Could not find node matching text:",v);return}let F=x.parentNode;if(!F){T.warn("⚠️ Node has no parent, cannot wrap:",v);return}let I=document.createElementNS("http://www.w3.org/2000/svg","a"),P=w.url.replace(/^"+|"+$/g,"");if(I.setAttributeNS("http://www.w3.org/1999/xlink","xlink:href",P),I.setAttribute("target","_blank"),w.tooltip){let _=w.tooltip.replace(/^"+|"+$/g,"");I.setAttribute("title",_),x.setAttribute("title",_)}F.replaceChild(I,x),I.appendChild(x),T.info("🔗 Wrapped node in <a> tag for:",v,w.url)})}catch(A){T.error("❌ Error injecting clickable links:",A)}jt.insertTitle(a,"statediagramTitleText",l?.titleTopMargin??25,s.db.getDiagramTitle()),Qt(a,b,it,l?.useMaxWidth??!0)},"draw"),es={getClasses:Ze,draw:ts,getDir:be},C={START_NODE:"[*]",START_TYPE:"start",END_NODE:"[*]",END_TYPE:"end",COLOR_KEYWORD:"color",FILL_KEYWORD:"fill",BG_FILL:"bgFill",STYLECLASS_SEP:","},ie=h(()=>new Map,"newClassesList"),ae=h(()=>({relations:[],states:new Map,documents:{}}),"newDoc"),yt=h(t=>JSON.parse(JSON.stringify(t)),"clone"),ss=class{constructor(t){this.version=t,this.nodes=[],this.edges=[],this.rootDoc=[],this.classes=ie(),this.documents={root:ae()},this.currentDocument=this.documents.root,this.startEndCount=0,this.dividerCnt=0,this.links=new Map,this.funs=[],this.getAccTitle=Pt,this.setAccTitle=Ft,this.getAccDescription=Yt,this.setAccDescription=Gt,this.setDiagramTitle=Vt,this.getDiagramTitle=Mt,this.clear(),this.setRootDoc=this.setRootDoc.bind(this),this.getDividerId=this.getDividerId.bind(this),this.setDirection=this.setDirection.bind(this),this.trimColon=this.trimColon.bind(this),this.bindFunctions=this.bindFunctions.bind(this)}static{h(this,"StateDB")}static{this.relationType={AGGREGATION:0,EXTENSION:1,COMPOSITION:2,DEPENDENCY:3}}extract(t){this.clear(!0);for(let s of Array.isArray(t)?t:t.doc)switch(s.stmt){case Q:this.addState(s.id.trim(),s.type,s.doc,s.description,s.note);break;case At:this.addRelation(s.state1,s.state2,s.description);break;case Ie:this.addStyleClass(s.id.trim(),s.classes);break;case Re:this.handleStyleDef(s);break;case Oe:this.setCssClass(s.id.trim(),s.styleClass);break;case"click":this.addLink(s.id,s.url,s.tooltip);break}let e=this.getStates(),i=N();Qe(),st(void 0,this.getRootDocV2(),e,this.nodes,this.edges,!0,i.look,this.classes);for(let s of this.nodes)if(Array.isArray(s.label)){if(s.description=s.label.slice(1),s.isGroup&&s.description.length>0)throw new Error(`Group nodes can only have label. Remove the additional description for node [${s.id}]`);s.label=s.label[0]}}handleStyleDef(t){let e=t.id.trim().split(","),i=t.styleClass.split(",");for(let s of e){let o=this.getState(s);if(!o){let l=s.trim();this.addState(l),o=this.getState(l)}o&&(o.styles=i.map(l=>l.replace(/;/g,"")?.trim()))}}setRootDoc(t){T.info("Setting root doc",t),this.rootDoc=t,this.version===1?this.extract(t):this.extract(this.getRootDocV2())}docTranslator(t,e,i){if(e.stmt===At){this.docTranslator(t,e.state1,!0),this.docTranslator(t,e.state2,!1);return}if(e.stmt===Q&&(e.id===C.START_NODE?(e.id=t.id+(i?"_start":"_end"),e.start=i):e.id=e.id.trim()),e.stmt!==q&&e.stmt!==Q||!e.doc)return;let s=[],o=[];for(let l of e.doc)if(l.type===oe){let f=yt(l);f.doc=yt(o),s.push(f),o=[]}else o.push(l);if(s.length>0&&o.length>0){let l={stmt:Q,id:Wt(),type:"divider",doc:yt(o)};s.push(yt(l)),e.doc=s}e.doc.forEach(l=>this.docTranslator(e,l,!0))}getRootDocV2(){return this.docTranslator({id:q,stmt:q},{id:q,stmt:q,doc:this.rootDoc},!0),{id:q,doc:this.rootDoc}}addState(t,e=rt,i=void 0,s=void 0,o=void 0,l=void 0,f=void 0,g=void 0){let a=t?.trim();if(!this.currentDocument.states.has(a))T.info("Adding state ",a,s),this.currentDocument.states.set(a,{stmt:Q,id:a,descriptions:[],type:e,doc:i,note:o,classes:[],styles:[],textStyles:[]});else{let m=this.currentDocument.states.get(a);if(!m)throw new Error(`State not found: ${a}`);m.doc||(m.doc=i),m.type||(m.type=e)}if(s&&(T.info("Setting state description",a,s),(Array.isArray(s)?s:[s]).forEach(b=>this.addDescription(a,b.trim()))),o){let m=this.currentDocument.states.get(a);if(!m)throw new Error(`State not found: ${a}`);m.note=o,m.note.text=W.sanitizeText(m.note.text,N())}l&&(T.info("Setting state classes",a,l),(Array.isArray(l)?l:[l]).forEach(b=>this.setCssClass(a,b.trim()))),f&&(T.info("Setting state styles",a,f),(Array.isArray(f)?f:[f]).forEach(b=>this.setStyle(a,b.trim()))),g&&(T.info("Setting state styles",a,f),(Array.isArray(g)?g:[g]).forEach(b=>this.setTextStyle(a,b.trim())))}clear(t){this.nodes=[],this.edges=[],this.funs=[this.setupToolTips.bind(this)],this.documents={root:ae()},this.currentDocument=this.documents.root,this.startEndCount=0,this.classes=ie(),t||(this.links=new Map,Bt())}getState(t){return this.currentDocument.states.get(t)}getStates(){return this.currentDocument.states}logDocuments(){T.info("Documents = ",this.documents)}getRelations(){return this.currentDocument.relations}addLink(t,e,i){this.links.set(t,{url:e,tooltip:i}),T.warn("Adding link",t,e,i)}getLinks(){return this.links}startIdIfNeeded(t=""){return t===C.START_NODE?(this.startEndCount++,`${C.START_TYPE}${this.startEndCount}`):t}startTypeIfNeeded(t="",e=rt){return t===C.START_NODE?C.START_TYPE:e}endIdIfNeeded(t=""){return t===C.END_NODE?(this.startEndCount++,`${C.END_TYPE}${this.startEndCount}`):t}endTypeIfNeeded(t="",e=rt){return t===C.END_NODE?C.END_TYPE:e}addRelationObjs(t,e,i=""){let s=this.startIdIfNeeded(t.id.trim()),o=this.startTypeIfNeeded(t.id.trim(),t.type),l=this.startIdIfNeeded(e.id.trim()),f=this.startTypeIfNeeded(e.id.trim(),e.type);this.addState(s,o,t.doc,t.description,t.note,t.classes,t.styles,t.textStyles),this.addState(l,f,e.doc,e.description,e.note,e.classes,e.styles,e.textStyles),this.currentDocument.relations.push({id1:s,id2:l,relationTitle:W.sanitizeText(i,N())})}addRelation(t,e,i){if(typeof t=="object"&&typeof e=="object")this.addRelationObjs(t,e,i);else if(typeof t=="string"&&typeof e=="string"){let s=this.startIdIfNeeded(t.trim()),o=this.startTypeIfNeeded(t),l=this.endIdIfNeeded(e.trim()),f=this.endTypeIfNeeded(e);this.addState(s,o),this.addState(l,f),this.currentDocument.relations.push({id1:s,id2:l,relationTitle:i?W.sanitizeText(i,N()):void 0})}}addDescription(t,e){let i=this.currentDocument.states.get(t),s=e.startsWith(":")?e.replace(":","").trim():e;i?.descriptions?.push(W.sanitizeText(s,N()))}cleanupLabel(t){return t.startsWith(":")?t.slice(2).trim():t.trim()}getDividerId(){return this.dividerCnt++,`divider-id-${this.dividerCnt}`}addStyleClass(t,e=""){this.classes.has(t)||this.classes.set(t,{id:t,styles:[],textStyles:[]});let i=this.classes.get(t);e&&i&&e.split(C.STYLECLASS_SEP).forEach(s=>{let o=s.replace(/([^;]*);/,"$1").trim();if(RegExp(C.COLOR_KEYWORD).exec(s)){let f=o.replace(C.FILL_KEYWORD,C.BG_FILL).replace(C.COLOR_KEYWORD,C.FILL_KEYWORD);i.textStyles.push(f)}i.styles.push(o)})}getClasses(){return this.classes}setupToolTips(t){let e=Zt();B(t).select("svg").selectAll("g.node, g.rough-node").on("mouseover",o=>{let l=B(o.currentTarget),f=l.attr("title");if(f===null)return;let g=o.currentTarget?.getBoundingClientRect();e.transition().duration(200).style("opacity",".9"),e.style("left",window.scrollX+g.left+(g.right-g.left)/2+"px").style("top",window.scrollY+g.bottom+"px"),e.html($t.sanitize(f)),l.classed("hover",!0)}).on("mouseout",o=>{e.transition().duration(500).style("opacity",0),B(o.currentTarget).classed("hover",!1)})}setCssClass(t,e){t.split(",").forEach(i=>{let s=this.getState(i);if(!s){let o=i.trim();this.addState(o),s=this.getState(o)}s?.classes?.push(e)})}setStyle(t,e){this.getState(t)?.styles?.push(e)}setTextStyle(t,e){this.getState(t)?.textStyles?.push(e)}bindFunctions(t){this.funs.forEach(e=>{e(t)})}getDirectionStatement(){return this.rootDoc.find(t=>t.stmt===te)}getDirection(){return this.getDirectionStatement()?.value??Le}setDirection(t){let e=this.getDirectionStatement();e?e.value=t:this.rootDoc.unshift({stmt:te,value:t})}trimColon(t){return t.startsWith(":")?t.slice(1).trim():t.trim()}getData(){let t=N();for(let e of this.nodes)e.wrappingWidth??=t.state?.wrappingWidth,e.isGroup||(e.minWidth??=t.state?.minNodeWidth);return{nodes:this.nodes,edges:this.edges,other:{},config:t,direction:be(this.getRootDocV2())}}getConfig(){return N().state}},rs=h(t=>{let{theme:e,bkgColorArray:i,borderColorArray:s}=t;if(!zt(e,s))return"";let o=Ht(t.look),l=Ut(i),f="";for(let g=0;g<Kt(s);g++){let a=s[g],m=l?`fill: ${i[g%i.length]};`:"",b=`[data-look="${o}"][data-color-id="color-${g}"]`;f+=`

    /* The title strip: \`rect.outer\` spans the whole composite and \`rect.inner\` covers
       the body, so what stays visible of \`outer\` is the band behind the label. */
    ${b}.statediagram-cluster rect.outer {
      stroke: ${a};
      ${m}
    }

    ${b}.statediagram-cluster rect.inner {
      stroke: ${a};
    }

    /* Concurrency regions. Siblings of one composite share a slot, so a divided composite
       reads as one thing split into parts rather than as several composites. */
    ${b}.statediagram-cluster rect.divider {
      stroke: ${a};
      ${m}
    }

    /* handDrawn draws the same container as roughjs shapes rather than plain rects, so it
       needs its own rules. \`roundedWithTitle\` and \`divider\` name those groups \`outer\`,
       \`inner\` and \`divider\` to match the classic branch, which is what lets these
       discriminate -- a bare \`.statediagram-cluster path\` rule reached the body as well and
       tinted the whole composite, losing \`compositeBackground\` and diverging from what
       classic and neo do.

       roughjs emits two paths per shape and marks them: the filled shape carries
       \`stroke="none"\` and the sketched outline carries \`fill="none"\`. Splitting on that is
       what keeps \`fill\` off the outline -- a rough outline is open squiggles, not a closed
       region, so filling it produces smears -- and keeps \`stroke\` off the fill shape, which
       would otherwise gain an edge it was drawn without. */
    ${b}.statediagram-cluster .outer path[stroke='none'] {
      ${m}
    }

    ${b}.statediagram-cluster .outer path[fill='none'] {
      stroke: ${a};
    }

    /* No \`.inner\` rule on purpose. The body shape is left entirely alone under handDrawn,
       where a rect's \`inner\` counterpart cannot be recoloured safely: roughjs draws a
       hachure fill as *stroked* lines, so its fill paths carry \`fill="none"\` exactly like
       the outline and no selector separates them. An \`.inner\` stroke rule therefore
       repainted the hatching of every alt composite in the palette colour instead of
       leaving it on \`altBackground\`. The container still reads as palette-coloured: the
       \`outer\` shape spans the whole composite, so its outline already frames the body. */

    /* Regions split the same way, which is why \`divider\` fills solid rather than taking
       roughjs's default hachure -- see the note on that call. Hatched, both of its paths
       carried \`fill="none"\` and these two rules degenerated: the tint matched nothing and
       the border rule repainted the hatching. */
    ${b}.statediagram-cluster .divider path[stroke='none'] {
      ${m}
    }

    ${b}.statediagram-cluster .divider path[fill='none'] {
      stroke: ${a};
    }
    `}return f},"genColor"),is=h(t=>`
${rs(t)}
defs [id$="-barbEnd"] {
    fill: ${t.transitionColor};
    stroke: ${t.transitionColor};
  }
g.stateGroup text {
  fill: ${t.nodeBorder};
  stroke: none;
  font-size: 10px;
}
g.stateGroup text {
  fill: ${t.textColor};
  stroke: none;
  font-size: 10px;

}
g.stateGroup .state-title {
  font-weight: bolder;
  fill: ${t.stateLabelColor};
}

g.stateGroup rect {
  fill: ${t.mainBkg};
  stroke: ${t.nodeBorder};
}

g.stateGroup line {
  stroke: ${t.lineColor};
  stroke-width: ${t.strokeWidth||1};
}

.transition {
  stroke: ${t.transitionColor};
  stroke-width: ${t.strokeWidth||1};
  fill: none;
}

.stateGroup .composit {
  fill: ${t.background};
  border-bottom: 1px
}

.stateGroup .alt-composit {
  fill: #e0e0e0;
  border-bottom: 1px
}

.state-note {
  stroke: ${t.noteBorderColor};
  fill: ${t.noteBkgColor};

  text {
    fill: ${t.noteTextColor};
    stroke: none;
    font-size: 10px;
  }
}

.stateLabel .box {
  stroke: none;
  stroke-width: 0;
  fill: ${t.mainBkg};
  opacity: 0.5;
}

.edgeLabel .label rect {
  fill: ${t.labelBackgroundColor};
  opacity: 0.5;
}
.edgeLabel {
  background-color: ${t.edgeLabelBackground};
  p {
    background-color: ${t.edgeLabelBackground};
  }
  rect {
    opacity: 0.5;
    background-color: ${t.edgeLabelBackground};
    fill: ${t.edgeLabelBackground};
  }
  text-align: center;
}
.edgeLabel .label text {
  fill: ${t.transitionLabelColor||t.tertiaryTextColor};
}
.label div .edgeLabel {
  color: ${t.transitionLabelColor||t.tertiaryTextColor};
}

.stateLabel text {
  fill: ${t.stateLabelColor};
  font-size: 10px;
  font-weight: bold;
}

.node circle.state-start {
  fill: ${t.specialStateColor};
  stroke: ${t.specialStateColor};
}

.node .fork-join {
  fill: ${t.specialStateColor};
  stroke: ${t.specialStateColor};
}

.node circle.state-end {
  fill: ${t.innerEndBackground};
  stroke: ${t.background};
  stroke-width: 1.5
}
.end-state-inner {
  fill: ${t.compositeBackground||t.background};
  // stroke: ${t.background};
  stroke-width: 1.5
}

.node rect {
  fill: ${t.stateBkg||t.mainBkg};
  stroke: ${t.stateBorder||t.nodeBorder};
  stroke-width: ${t.strokeWidth||1}px;
}
.node polygon {
  fill: ${t.mainBkg};
  stroke: ${t.stateBorder||t.nodeBorder};;
  stroke-width: ${t.strokeWidth||1}px;
}
[id$="-barbEnd"] {
  fill: ${t.lineColor};
}

.statediagram-cluster rect {
  fill: ${t.compositeTitleBackground};
  stroke: ${t.stateBorder||t.nodeBorder};
  stroke-width: ${t.strokeWidth||1}px;
}

.cluster-label, .nodeLabel {
  color: ${t.stateLabelColor};
  // line-height: 1;
}

.statediagram-cluster rect.outer {
  rx: 5px;
  ry: 5px;
}
.statediagram-state .divider {
  stroke: ${t.stateBorder||t.nodeBorder};
}

.statediagram-state .title-state {
  rx: 5px;
  ry: 5px;
}
.statediagram-cluster.statediagram-cluster .inner {
  fill: ${t.compositeBackground||t.background};
}
.statediagram-cluster.statediagram-cluster-alt .inner {
  fill: ${t.altBackground?t.altBackground:"#efefef"};
}

.statediagram-cluster .inner {
  rx:0;
  ry:0;
}

.statediagram-state rect.basic {
  rx: 5px;
  ry: 5px;
}
.statediagram-state rect.divider {
  stroke-dasharray: 10,10;
  fill: ${t.altBackground?t.altBackground:"#efefef"};
}

.note-edge {
  stroke-dasharray: 5;
}

.statediagram-note rect {
  fill: ${t.noteBkgColor};
  stroke: ${t.noteBorderColor};
  stroke-width: 1px;
  rx: 0;
  ry: 0;
}
.statediagram-note rect {
  fill: ${t.noteBkgColor};
  stroke: ${t.noteBorderColor};
  stroke-width: 1px;
  rx: 0;
  ry: 0;
}

.statediagram-note text {
  fill: ${t.noteTextColor};
}

.statediagram-note .nodeLabel {
  color: ${t.noteTextColor};
}
.statediagram .edgeLabel {
  color: red; // ${t.noteTextColor};
}

[id$="-dependencyStart"], [id$="-dependencyEnd"] {
  fill: ${t.lineColor};
  stroke: ${t.lineColor};
  stroke-width: ${t.strokeWidth||1};
}

.statediagramTitleText {
  text-anchor: middle;
  font-size: 18px;
  fill: ${t.textColor};
}

[data-look="neo"].statediagram-cluster rect {
  fill: ${t.mainBkg};
  stroke: ${t.useGradient?"url("+t.svgId+"-gradient)":t.stateBorder||t.nodeBorder};
  stroke-width: ${t.strokeWidth??1};
}
[data-look="neo"].statediagram-cluster rect.outer {
  rx: ${t.radius}px;
  ry: ${t.radius}px;
  filter: ${t.dropShadow?t.dropShadow.replace("url(#drop-shadow)",`url(${t.svgId}-drop-shadow)`):"none"}
}
`,"getStyles"),as=is,Ps={parser:we,get db(){return new ss(2)},renderer:es,styles:as,init:h(t=>{t.state||(t.state={}),t.state.arrowMarkerAbsolute=t.arrowMarkerAbsolute},"init")};export{Ps as diagram};
