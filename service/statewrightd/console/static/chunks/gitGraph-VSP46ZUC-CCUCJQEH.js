import{a as r,b as e}from"./chunk-CEH2NJYT.js";import"./chunk-TZKC56AF.js";import"./chunk-PHKIAKHS.js";export{r as GitGraphModule,e as createGitGraphServices};
